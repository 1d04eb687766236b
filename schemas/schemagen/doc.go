// Package schemagen derives rein's JSON Schemas from the Go types that
// encode its payloads, with github.com/invopop/jsonschema. It is the one
// source of the files under schemas/jsonschema/: `go generate ./schemas`
// (which runs ./schemas/gen) writes them, and this package's test
// regenerates them in memory and fails when a checked-in file differs, so a
// Go type changed without regenerating fails the build.
//
// The constraints come from struct tags on the types in package schemas
// (`jsonschema:"required,enum=…,minLength=…,maxLength=…,format=…"`; a
// field is required only when tagged so, because a turn's number may travel
// in its CloudEvent attribute instead of its data). Two documents describe
// types that live outside package schemas — the sidecar answer
// (injector.Answer) and the handoff work item (escalation.HandoffItem) —
// and for those, as encoding/json writes them, a field is required unless it
// is omitempty. What tags cannot say is added by the post-processing step
// of each document (see extend in schemagen.go): the detection's "an
// activated detection names its error type and reasoning" rule, the
// sidecar answer's status values and the handoff transcript's roles.
//
// It produces and consumes no messages and exports no metrics.
package schemagen
