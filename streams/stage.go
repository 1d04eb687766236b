package streams

import (
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// The skeleton every stage shares: its collaborators (StageDeps, embedded
// in each stage's Deps) and the one question idempotency asks of it (what
// of an input's outputs is Stored). A stage adds its own Config (with
// Validate applying defaults), New, ConsumerConfig and handler; the
// consume loop decides every ack, and when to ask.

// StageDeps are what every stage is given: JetStream on the stage's own
// connection, the publisher on it, a logger and the metrics registerer.
type StageDeps struct {
	JS         jetstream.JetStream
	Publisher  *Publisher
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Stored is what of an input's outputs a stage finds stored already
// (ConsumerConfig.Stored).
type Stored uint8

const (
	// StoredNone: none of them, or the stage cannot tell; the handler runs
	// as for a new input.
	StoredNone Stored = iota
	// StoredSome: part of them; the handler publishes only what is missing,
	// from what is stored, never deciding the input again.
	StoredSome
	// StoredAll: every one; the input is decided (the loop acks it without
	// running the handler, and the order gate lets its successor run).
	StoredAll
)

// OutputStreams are a stage's output streams (ConsumerConfig.Outputs), by
// name, looked up once when its consumer starts.
type OutputStreams map[string]jetstream.Stream
