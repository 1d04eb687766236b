// Package streams is rein's NATS boundary. It holds, in names.go, every
// stream, subject, durable consumer, KV bucket and header name; it starts
// the embedded nats-server (server.go) or connects to an external cluster
// (connect.go); it provisions the streams idempotently (provision.go); it
// encodes and decodes CloudEvents in binary content mode, as the CloudEvents
// NATS binding and sdk-go's nats_jetstream protocol do (codec.go; the hot
// path writes and reads the ce- headers directly in cebinary.go, checked
// against sdk-go by equivalence tests and a differential fuzz target, with
// sdk-go as the fallback and for structured mode); it
// publishes with Nats-Msg-Id = event id so redelivery never duplicates an
// output (publisher.go); it runs every stage's consume loop (consume.go,
// with one growing queue per worker in partition.go),
// dead-lettering what cannot be handled (dlq.go); it accepts turns over
// HTTP, POST /v1/turns (ingress.go); and it reads stream ranges back through
// ordered consumers that leave no durable state (read.go).
//
// # Trust on the bus
//
// The embedded server never runs without authentication. EnsureKeyring
// (credentials.go) generates, on first start, one nkey per identity under
// <data dir>/nats-keys (0700, seeds 0600): admin (provisioning and the CLI
// tools), ingress, detector, detector-injector (the fused detector, which
// also stores tasks), injector, agentworker and escalation, plus one
// ingress-<tenant> identity per tenant added with AddTenantIngress.
// permissions.go is the one table of what each may publish and subscribe
// to, built from the names in names.go: a stage publishes only what it
// produces (and its own rein.dlq.<stage>), holds the JetStream API of its
// own durable only (create, info, next, unpin, its $JS.ACK subjects), gets
// and reads only the streams it reads, and takes replies on _INBOX.>; a
// tenant's ingress identity stores only rein.turns.<tenant>.>. A
// non-loopback client port needs TLS (ServerConfig.TLSCert) unless
// explicitly insecure.
//
// # Streams
//
//	REIN_TURNS       rein.turns.<tenant>.<conv>.user|agent   the surface dialogue
//	REIN_DETECTIONS  rein.detections.<tenant>.<conv>         every decision
//	REIN_TASKS       rein.tasks.<tenant>.<conv>              agent work items
//	REIN_STEPS       rein.steps.<tenant>.<conv>              the agent's internal steps
//	REIN_OUTCOMES    rein.escalations|reports.<tenant>.<conv>
//	REIN_DLQ         rein.dlq.<stage>                        dead letters
//	REIN_HANDOFF     rein.handoff.items|timeout.<tenant>.<conv> (work queue)
//	KV REIN_CONVERSATIONS  <tenant>.<conv>                   agent state, a record per write (history 64)
//
// # The consume loop
//
// Handlers are func(ctx, Decoded) error and never ack. The loop decides
// once: nil → ack; an error → retried in place with exponential backoff
// (in-progress heartbeats keep the message owned); an error wrapping
// ErrPermanent, a handler panic, spent attempts, or an undecodable message
// → a dev.rein.deadletter.v1 on rein.dlq.<stage> with the reason and the
// original subject, headers and body, then term. If the dead letter itself
// cannot be stored the message is released for redelivery, so nothing is
// lost. On shutdown the loop stops pulling, lets in-flight handlers finish
// (bounded by a grace period) and naks what it had queued.
//
// # Per-conversation ordering
//
// Turns of one conversation must be handled strictly in order and one at a
// time; different conversations in parallel. The design:
//
//   - Within a process, the delivery callback hashes <tenant>.<conv> (from
//     the subject) to one of N worker goroutines, each with its own queue.
//     A conversation therefore has exactly one writer, which may keep the
//     conversation's state in memory. Retries happen in place, so a failing
//     turn holds back the later turns of its conversation only.
//   - Across replicas, every durable consumer uses a pinned-client priority
//     group: the server delivers to one replica at a time and moves the pin
//     to another when the pinned one stops pulling (PinnedTTL = 2×AckWait),
//     or at once when it drains cleanly and unpins. Redeliveries after a
//     failover come in stream order, and every output is published with a
//     deterministic Nats-Msg-Id, so a turn handled twice yields one output.
//     Past the duplicate window the ids no longer protect: an input stored
//     longer ago than half of it (Decoded.Stored, the server's timestamp)
//     (RecheckAfter) is checked against the conversation's last stored
//     output (LastTurn or LastEvent, one direct get) before it is handled
//     again; so is, by the detector, an input delivered before without an
//     ack (Decoded.Delivered > 1). What the window still covers — a turn cut short by a crash,
//     its stored outputs published again AckWait later — is why a stage
//     warns at start when the window is shorter than its AckWait
//     (WarnShortWindow).
//     More replicas give availability; throughput scales with workers per
//     replica and with separate consumers per tenant set.
//
// Why not a KV lookup per message: on this hardware a blocking KV get+CAS
// costs more than a whole stream hop (see ../shared/perf: 1 hop 31.5k/s vs
// 1 hop + KV 4.7k/s), so state lives in memory with its single writer and is
// written back to REIN_CONVERSATIONS, a record of the turn's part under the
// conversation's key with a concurrency check on that key, only when it must
// survive a crash.
//
// Metrics: rein_stage_messages_total{stage,outcome},
// rein_stage_handle_seconds{stage}, rein_published_total{stream}.
package streams
