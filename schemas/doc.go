// Package schemas holds rein's event contracts: the CloudEvents type names,
// the Go payload structs, one JSON Schema (draft 2020-12) per payload embedded
// from jsonschema/, validation that names the offending field, identifier
// rules and deterministic event ids.
//
// The files in jsonschema/ are generated from the Go types (package
// schemagen; the constraints are the structs' `jsonschema` tags): after
// changing a payload type, run `go generate ./schemas`. Besides the event
// payloads they describe two plain JSON documents (AllDocuments): the
// sidecar answer and the handoff work item.
//
// Validation checks a payload's bytes in one pass against the compiled
// schema when the schema stays within the subset fastvalidate.go handles
// (every rein schema does; a test keeps it so); anything that pass does
// not accept goes to santhosh-tekuri/jsonschema, which decides and names
// the field. A differential test and fuzz target hold the two together.
//
// The payloads most events carry (turn, task, step) are written and read
// without reflection (payload_json.go): the bytes json.Marshal writes,
// the fields json.Unmarshal sets, anything else left to encoding/json;
// differential tests and fuzz targets compare them with it. Build is
// BuildEvent without the CloudEvent (Built), for a stage's output that the
// publisher encodes straight from its fields.
//
// It consumes and produces nothing on its own; every stage validates with it
// at its boundary (ingress and consume). It exports no metrics.
package schemas

//go:generate go run ./gen -dir jsonschema
