// Package streams is rein's NATS boundary: what every stage and tool that
// touches the bus shares, under the names of streams/bus; it connects to the embedded
// server or an external cluster (connect.go); it encodes and decodes
// CloudEvents in binary content mode, as the CloudEvents NATS binding and
// sdk-go's nats_jetstream protocol do (codec.go; the hot path writes and
// reads the ce- headers directly in cebinary.go, checked against sdk-go by
// equivalence tests and a differential fuzz target, with sdk-go as the
// fallback and for structured mode; ReadBinary is that direct reader, which
// the ingress also reads HTTP requests with, and EncodeChecked encodes an
// offered event and makes Decode's checks once); it publishes with Nats-Msg-Id = event
// id so redelivery never duplicates an output (publisher.go; a stage's own
// output may come as a schemas.Built in Out.Built, its headers written from
// its fields, the same message as its event's), stores turns
// and feedback from outside under ids rein derives (turnpub.go,
// feedback.go) and dead letters (dlq.go); it reads stream ranges and a
// subject's last events back through ordered consumers and direct gets that
// leave no durable state (read.go, read_subject.go, last.go); and it finds
// streams and creates durables under the retries a starting cluster needs
// (ensure.go).
//
// Below it, streams/bus names every stream, subject, durable consumer, KV
// bucket and header rein uses, in one file (names.go); it imports nothing
// of rein's, so the stages, tools and tests name the bus without the
// transport. Above it, one package each (they import streams, never each
// other):
//
//   - streams/consume: every stage's consume loop (ack, retry, dead letter,
//     per-conversation scheduling, the crash-order gate, partitions and
//     their members, the recheck of what is stored), and dead-letter
//     listing and redrive.
//   - streams/natsserver: the embedded nats-server, its identities (nkeys,
//     the permission table, secret files, the data-dir lock) and the
//     provisioning of streams and buckets.
//   - streams/ingress: the HTTP ingress (POST /v1/turns, /v1/feedback) and
//     the tenant ingest subjects.
//
// # Publishing and reading
//
// Every output is published with a deterministic Nats-Msg-Id
// (schemas.EventID: <stage>.<tenant>.<conv>.<turn>, a separator outside the
// id alphabet), so a turn handled twice yields one output; turns from
// outside are stored under ids derived from tenant, conversation, turn and
// role (PublishTurn), never a caller's. What of an input's outputs is
// stored is read with LastTurn, LastEvent or TurnStored, one direct get
// when the conversation's last output answers. A conversation's messages
// are read with ReadSubject (batched direct gets); FirstData asks for a
// subject's first payload without the stored headers, the cheap probe.
//
// Metrics: rein_published_total{stream}.
//
// Sizes: events are at most DefaultMaxEventBytes (256 KiB); every stream
// stores at most MaxMessageBytes (576 KiB, room for a full-size event's dead
// letter); the embedded server takes at most MaxPayloadBytes (1 MiB) from a
// client. The process running the embedded server holds DATA-DIR/rein.lock
// (LockDataDir).
package streams
