// Package stagetest is the contract every rein stage keeps with the
// consume loop, as one suite a stage's tests run with its own adapter:
// Run(t, features, newStage).
//
// The contract, one subtest each:
//
//   - AckOnNil: an input handled without error yields its outputs and is
//     acked.
//   - RetryInPlace: a collaborator's transient failure is retried in place
//     (or, for a fail-open stage, recorded in an output); either way the
//     input ends with its outputs and nothing is dead-lettered.
//   - PermanentDeadLetters: an input the stage rejects for good, and a
//     collaborator's final failure, go to rein.dlq.<stage> with a reason,
//     and the input is acked.
//   - Panic: a panicking collaborator never crashes the process: the input
//     is dead-lettered with the panic as its reason, or handled fail-open,
//     as the stage's features say.
//   - NoDuplicateOnRedelivery: an input delivered again after its outputs
//     were stored (a durable made anew, a lost ack) yields no second
//     output, and a stage that checks stored outputs does not ask its
//     collaborator again.
//   - StoredSkipsHandler: for a stage that checks its stored outputs
//     (ConsumerConfig.Stored), such an input is acked by the consume loop
//     without running the handler (rein_stage_messages_total counts it
//     "stored", not "ack").
//   - HeldSuccessorReleased: a conversation's later input waits while an
//     earlier one is held by a holder that died, and runs once the earlier
//     one is decided, so outputs keep the conversation's order.
//   - DrainOnCancel: Run returns nil after its context is cancelled, and
//     only once the input in flight is finished (its outputs stored).
//
// A stage's adapter (a _test.go file in the stage's package) builds the
// stage on the suite's in-process JetStream, wires the suite's Fault into
// the collaborator its handler calls (the inception module, a sink, the
// model) and says how inputs are published and outputs counted.
package stagetest
