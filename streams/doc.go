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
// scheduling by conversation in schedule.go and the crash-order gate in
// order.go),
// dead-lettering what cannot be handled (dlq.go); it accepts turns over
// HTTP, POST /v1/turns (ingress.go); and it reads stream ranges back through
// ordered consumers that leave no durable state (read.go).
//
// # Trust on the bus
//
// The embedded server never runs without authentication. EnsureKeyring
// (credentials.go) generates, on first start, one nkey per identity under
// <data dir>/nats-keys (0700, seeds 0600): admin (provisioning and the CLI
// tools), ingress, detector (which stores each detection with its task),
// injector (the sidecar responder), agentworker and escalation, plus one
// ingress-<tenant> identity per tenant added with AddTenantIngress.
// permissions.go is the one table of what each may publish and subscribe
// to, built from the names in names.go: a stage publishes only what it
// produces (and its own rein.dlq.<stage>), holds the JetStream API of its
// own durable only (create, info, next, unpin, its $JS.ACK subjects), gets
// and reads only the streams it reads, and takes replies on _INBOX.>; a
// tenant's ingress identity stores only rein.turns.<tenant>.<conv>.<role>. A
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
//	KV REIN_MEMBERS        <stage>.<id>                      live replicas of partitioned stages (TTL 6 s; partitions > 1)
//
// With partitions, the first three store <subject>.<partition>.
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
// # Per-conversation ordering and scheduling
//
// Turns of one conversation must be handled strictly in order and one at a
// time; different conversations in parallel. The design:
//
//   - Within a process, the delivery callback queues each message on its
//     conversation (<tenant>.<conv> from the subject; schedule.go): a queue
//     ordered by stream sequence, drained by one goroutine while it has
//     work. A conversation therefore has exactly one writer, which may keep
//     its state in memory. ConsumerConfig.MaxInFlight bounds the handlers
//     running at once (default: MaxAckPending, 4096); a conversation
//     waiting on a model holds one slot and never holds up another.
//     Retries happen in place, so a failing turn holds back the later turns
//     of its conversation only. Queued messages get heartbeats too.
//   - Across replicas, every durable consumer uses a pinned-client priority
//     group: the server delivers to one replica at a time and moves the pin
//     to another when the pinned one stops pulling (ConsumerConfig.PinTTL,
//     default 10 s), or at once when it drains cleanly and unpins.
//   - Partitions (partition.go, members.go, consume_group.go): with
//     streams.partitions N > 1, REIN_TURNS, REIN_DETECTIONS and REIN_TASKS
//     store each message under its subject plus a partition token the
//     server computes from tenant and conversation, and the stage consuming
//     one has a pinned durable per partition (<durable>-p<k>). Its live
//     replicas renew keys in the REIN_MEMBERS bucket and split the
//     partitions evenly; a replica drains what it gives up. A conversation
//     is in one partition, so it keeps one holder while up to N replicas
//     work. Readers of those streams look a subject up with StoredFilter.
//   - Across a crash (order.go): a dead holder's unacked messages come back
//     only after AckWait, while the next holder already receives the later
//     ones. The order gate notices that deliveries may be outstanding
//     elsewhere — the ack floor is below what was delivered when the
//     consumer starts, or the delivery sequence skips (another client was
//     delivered to) — and until the ack floor has passed them, a message
//     runs only once the previous message on its subject (one batch direct
//     get) is under the floor, was decided here, or is settled (its outputs
//     all stored: ConsumerConfig.Stored); otherwise it is held, costing no
//     slot, up to MaxHold (3×AckWait, at least a minute; counted as a
//     timeout, and a turn overtaken that way ends with an explicit
//     superseded record).
//   - Every output is published with a deterministic Nats-Msg-Id
//     (schemas.EventID: <stage>.<tenant>.<conv>.<turn>, a separator outside
//     the id alphabet), so a turn handled twice yields one output; turns
//     from outside are stored under ids derived from tenant, conversation,
//     turn and role (PublishTurn), never a caller's. Past the duplicate
//     window the ids no longer protect. Idempotency has one home, the
//     stage's ConsumerConfig.Stored (what of an input's outputs is stored:
//     none, some or all; read with LastTurn, LastEvent or TurnStored, one
//     direct get when the conversation's last output answers): the loop
//     asks it before handling an input delivered before without an ack
//     (Decoded.Delivered > 1) or stored longer ago than the recheck age
//     (half the first output's window, RecheckAfter), acks an input whose
//     outputs are all stored unhandled (outcome "stored"), and hands
//     StoredSome to the handler (Decoded.Outputs), which publishes only
//     what is missing. What the window still covers — a turn cut short by
//     a crash, its stored outputs published again AckWait later — is why
//     a consumer warns at start when the window is shorter than its
//     AckWait (WarnShortWindow).
//   - An input about to be dead-lettered first has its outcome recorded
//     (ConsumerConfig.OnDeadLetter): every user turn ends with one.
//   - An input whose outputs could not be stored, or whose context could
//     not be read (its handler's last attempt failed with IsUnavailable:
//     the publisher gave up on an output stream, a stream answered
//     nothing or had no leader), is never dead-lettered: the loop hands
//     it back, and it is redelivered until the streams are back.
//
// # Replication
//
// ProvisionConfig sets each stream's replicas and placement (cluster,
// server tags) and the bucket's replicas (kv_replicas); rein serve's
// --stream-replicas, --kv-replicas and --placement-tags override them.
// Provision (provision_apply.go) creates each stream or brings it to its
// configuration, but never lowers an existing stream's replicas nor drops
// its placement: a process started with fewer keeps what the stream has
// and logs it. It retries, with jittered backoff until its context ends,
// what a cluster that is starting or placing replicas answers (timeouts,
// no meta leader, insufficient resources, a concurrent create), so many
// processes may start together on a fresh cluster; more than one replica
// on a server outside a cluster is ErrReplicasUnavailable, naming the fix.
// A stage's durable consumer is created under the same retries
// (EnsureConsumer).
// Status reports a stream's replicas, leader and the other replicas'
// state; CheckWritable (health.go) is the readiness probe: ErrNoLeader
// when a stream has no leader or JetStream does not answer in time.
//
// Why not a KV lookup per message: on this hardware a blocking KV get+CAS
// costs more than a whole stream hop (see ../shared/perf: 1 hop 31.5k/s vs
// 1 hop + KV 4.7k/s), so state lives in memory with its single writer and is
// written back to REIN_CONVERSATIONS, a record of the turn's part under the
// conversation's key with a concurrency check on that key, only when it must
// survive a crash.
//
// Metrics: rein_stage_messages_total{stage,outcome},
// rein_stage_handle_seconds{stage}, rein_stage_in_flight{stage},
// rein_stage_queued_messages{stage}, rein_stage_conversations{stage},
// rein_stage_order_holds_total{stage,outcome},
// rein_stage_terminated_total{stage,reason} (a dead letter refused through
// every attempt: too_large, refused), rein_published_total{stream}.
//
// Sizes: events are at most DefaultMaxEventBytes (256 KiB); every stream
// stores at most MaxMessageBytes (576 KiB, room for a full-size event's dead
// letter); the embedded server takes at most MaxPayloadBytes (1 MiB) from a
// client. The process running the embedded server holds DATA-DIR/rein.lock
// (LockDataDir).
package streams
