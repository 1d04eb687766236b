// Package audit reads back what rein did and what it would have done:
// replay, conversation timelines, counterfactual (shadow) detection, and
// stream backup and restore. It is the library behind `rein replay`,
// `rein audit`, `rein shadow` and `rein streams backup|restore`.
//
// # Consumes
//
// Any rein stream, read through ordered consumers (Read), which leave no
// durable state behind. Read is the raw path: it hands over subject,
// sequence, stored time, headers and body without a CloudEvents decode or
// schema validation per message, so that replay is bound by NATS, not by
// sdk-go. Tenant and conversation select by subject (streams.SubjectsFor)
// and, on streams whose subjects do not carry them (REIN_DLQ, replay
// namespaces), by the ce-tenant / ce-conversation headers.
//
// # Produces
//
//   - Replay: a selection written as jsonl or text, or republished (the
//     loop behind rein replay); a stored message that is not an event never
//     stops it (jsonl counts it in Replayed.Skipped). TuneGC is the
//     collector setting it runs under: GOGC 400 below a 256 MiB soft heap
//     limit. BenchmarkReplay measures it against a bare ordered consumer
//     (docs/performance.md, "Replay").
//   - JSONLWriter: CloudEvents structured-mode JSON, one event per line,
//     built from the binary-mode headers (AppendStructured); sdk-go reads
//     each line back to the same event (see jsonl_test.go).
//   - TextWriter: a readable transcript grouped by conversation (held in
//     memory up to MaxBuffered, 64 MiB, then written out;
//     BenchmarkTextHeap measures the heap that costs); Timeline/WriteTimeline: one
//     conversation's events from every stream merged in time order, each
//     agent action naming the detection that preceded it (a detection
//     shows its experiment arm; the platform's feedback is in it too).
//     Both show a dev.rein.steps.v1 (a quick turn's steps in one event)
//     as the single steps it holds, a line or entry each; jsonl and
//     Republisher copy it as stored.
//   - ExperimentConversations: one tenant's holdout experiment read from
//     REIN_DETECTIONS, REIN_OUTCOMES, REIN_STEPS and REIN_FEEDBACK, as
//     package experiment's Conversation records (rein experiment report).
//   - Republisher: copies events into a replay namespace, subject
//     <prefix>.<original subject> in DefaultReplayStream (REIN_REPLAY,
//     created on demand). CheckPrefix refuses "rein" and "rein.…", so a
//     replay never lands on a live subject.
//   - Shadow: re-runs a detector.Module over recorded user turns, with the
//     surface context rebuilt from REIN_TURNS as the detector stage does
//     (UserTurns), and compares with REIN_DETECTIONS, or with a baseline
//     module re-run on the same turns (the live module against a
//     candidate model); given labels, it measures each on them
//     (labels.QualityOf). It publishes nothing.
//   - LabelledExamples: labelled turns as training examples, each with
//     its rebuilt input and the labeller's truth (rein train --labels).
//   - Backup/Restore: the JetStream snapshot API ($JS.API.STREAM.SNAPSHOT /
//     RESTORE): each stream's server snapshot (s2-compressed archive of its
//     blocks and consumers) is saved byte for byte as <stream>.snapshot with
//     its configuration and state in <stream>.json; restore streams the
//     chunks back, each acknowledged by the server.
//
// # Retention and the durable profile
//
// Retention is per stream in the streams section of rein.yaml
// (streams.ProvisionConfig): max_age and max_bytes (0 = unlimited; the
// oldest messages are discarded first), duplicates (the Nats-Msg-Id
// window), replicas and memory. durable: true is the audit profile for
// streams that must not lose an acknowledged write (typically
// REIN_DETECTIONS, REIN_TASKS, REIN_STEPS and REIN_OUTCOMES): the embedded
// server then syncs every write to disk before acknowledging
// (sync_interval: always), and on a cluster the stream should run with
// replicas: 3 so that a write is acknowledged only once a quorum of two
// servers holds it. An external server must be configured with
// sync_interval: always itself. Example:
//
//	streams:
//	  defaults: {max_age: 720h}
//	  streams:
//	    REIN_TURNS:      {max_age: 2160h, max_bytes: 50000000000}
//	    REIN_DETECTIONS: {durable: true, replicas: 3, max_age: 8760h}
//	    REIN_OUTCOMES:   {durable: true, replicas: 3}
//
// Backups complement retention: a snapshot is consistent per stream, not
// across streams; take it when traffic is low, and restore with the rein
// stages stopped.
//
// # Metrics
//
// None: these are operator commands, not long-running stages.
package audit
