// Package schemas holds rein's event contracts: the CloudEvents type names,
// the Go payload structs, one JSON Schema (draft 2020-12) per payload embedded
// from jsonschema/, validation that names the offending field, identifier
// rules and deterministic event ids.
//
// It consumes and produces nothing on its own; every stage validates with it
// at its boundary (ingress and consume). It exports no metrics.
package schemas
