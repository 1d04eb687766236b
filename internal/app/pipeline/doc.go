// Package pipeline starts and wires rein's pipeline stages in one process:
// what `rein serve`, `rein demo`, `rein bench` and `rein eval run` share.
//
// Start brings up NATS (an embedded nats-server with JetStream file storage
// whose connections each use one of rein's nkey identities, or a connection
// to an external server or cluster), provisions every rein stream
// idempotently, and opens the HTTP port (/metrics, /healthz, /readyz,
// POST /v1/turns, the dashboard). Process.Run builds the named stages
// (detector, which stores each turn's detection with its signed task;
// injector, the sidecar responder; agentworker; escalation; ResolveStages
// reads a --stages list), each on its own NATS connection under its own
// identity, and runs them
// until the context ends; the first stage to fail stops the others.
// Modules builds the inception module. With Stages.ModelReload the
// detector holds it in an inception.Live and looks for a promoted model
// (modelreload.go): a changed model file, or path, rebuilds the learned
// parts, swapped in between turns. With Modules.FewShot the detector
// reads each tenant's few-shot examples from REIN_LABELS when it starts.
//
// Consumes and produces: what the stages it runs consume and produce (see
// each stage's doc.go), and POST /v1/turns into rein.turns.<tenant>.<conv>.user.
// Exports: the metrics of the stages it runs, the publisher's, the
// ingress's and the JetStream stream collector's, on the Process's own
// registry (Process.Reg); none of its own.
//
// Flags, environment and rein.yaml are read by cmd/rein, which fills
// Config and Stages; this package reads no flags.
package pipeline
