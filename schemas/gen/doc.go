// Command gen writes rein's JSON Schemas, derived from the Go types by
// package schemagen, into schemas/jsonschema/. Run it with
// `go generate ./schemas` (or `go run ./schemas/gen` from the module root)
// after changing a payload type; schemagen's test fails until you do.
package main
