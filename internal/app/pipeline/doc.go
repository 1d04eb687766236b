// Package pipeline starts and wires rein's pipeline stages in one process:
// what `rein serve`, `rein demo`, `rein bench` and `rein eval run` share.
//
// Start brings up NATS (an embedded nats-server with JetStream file storage
// whose connections each use one of rein's nkey identities, or a connection
// to an external server or cluster), provisions every rein stream
// idempotently, and opens the HTTP port (/metrics, /healthz, /readyz,
// POST /v1/turns, the dashboard); a failure releases whatever had started.
// Process.Run builds the named stages from Stages (each stage's own Config,
// filled by cmd/rein's flags, plus what a driver hands in ready-made) and
// runs them until the context ends; the first stage to fail stops the
// others. The stages are the rows of one table (stages.go), in data-flow
// order, each with its input stream, NATS identity and constructor:
// detector (which stores each turn's detection with its signed task),
// injector (the sidecar responder), agentworker, escalation. Each runs on
// its own NATS connection under its own identity. ResolveStages reads a
// --stages list; Modules builds the inception module.
// With Stages.ModelReload the detector holds its module in an
// inception.Live and looks for a promoted model (modelreload.go): a
// changed model file, or path, rebuilds the learned parts, swapped in
// between turns. With Modules.FewShot the detector reads each tenant's
// few-shot examples from REIN_LABELS when it starts.
//
// Consumes and produces: what the stages it runs consume and produce (see
// each stage's doc.go), and POST /v1/turns into rein.turns.<tenant>.<conv>.user.
// Exports: the metrics of the stages it runs, the publisher's, the
// ingress's and the JetStream stream collector's, on the Process's own
// registry (Process.Reg); none of its own.
//
// Flags, environment and rein.yaml are read by cmd/rein, which fills
// Config and Stages; this package reads no flags, and the benchmark's own
// knobs (a simulated inception latency) live in internal/app/bench.
package pipeline
