// Package consume runs a stage's consume loop on its durable JetStream
// consumer: handlers are func(ctx, streams.Decoded) error and never ack;
// the loop decides every ack, retry and dead letter, schedules by
// conversation, holds a turn whose predecessor may still be outstanding
// after a crash, and splits a partitioned stage's partitions among its
// live replicas. It also lists and redrives dead letters (redrive.go).
//
// Consumes: the stream and filter of each ConsumerConfig (a stage's
// durable, <durable>-p<k> with partitions) and the REIN_MEMBERS bucket.
// Produces: rein.dlq.<stage> (dev.rein.deadletter.v1) and the keys of
// REIN_MEMBERS; redrive republishes a dead letter's original message.
//
// # The consume loop
//
// Handlers are func(ctx, Decoded) error and never ack. The loop decides
// once: nil → ack; an error → retried in place with exponential backoff
// (in-progress heartbeats keep the message owned); an error wrapping
// streams.ErrPermanent, a handler panic, spent attempts, or an undecodable message
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
//     work (drainers are reused across conversations, so their grown
//     stacks are too; idle ones end after a heartbeat tick unused). A
//     conversation therefore has exactly one writer, which may keep
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
//     work. Readers of those streams look a subject up with StoredSubject.
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
//     none, some or all; read with streams.LastTurn, streams.LastEvent or streams.TurnStored, one
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
//     not be read (its handler's last attempt failed with streams.IsUnavailable:
//     the publisher gave up on an output stream, a stream answered
//     nothing or had no leader), is never dead-lettered: the loop hands
//     it back, and it is redelivered until the streams are back.
//
// Memory is bounded by construction: besides MaxInFlight messages handled
// at once, the bytes of the messages held (queued or handled) stay within
// MaxInFlightBytes (budget.go). Past it the delivery callback waits, so the
// client asks the server for nothing more; the waiting message is kept
// owned by heartbeats, and those the client had already received are at
// worst redelivered after AckWait and settled by Stored.
//
// Why not a KV lookup per message: on this hardware a blocking KV get+CAS
// costs more than a whole stream hop (see ../shared/perf: 1 hop 31.5k/s vs
// 1 hop + KV 4.7k/s), so state lives in memory with its single writer and is
// written back to REIN_CONVERSATIONS, a record of the turn's part under the
// conversation's key with a concurrency check on that key, only when it must
// survive a crash.
//
// Metrics: rein_stage_messages_total{stage,outcome},
// rein_stage_handle_seconds{stage}, rein_stage_in_flight{stage}, rein_stage_in_flight_bytes{stage},
// rein_stage_queued_messages{stage}, rein_stage_conversations{stage},
// rein_stage_order_holds_total{stage,outcome},
// rein_stage_terminated_total{stage,reason} (a dead letter refused through
// every attempt: too_large, refused).
package consume
