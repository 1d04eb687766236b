package streams

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// The skeleton every stage shares: its collaborators (StageDeps, embedded
// in each stage's Deps), the start-up of its Run (StartStage: outputs
// looked up, recheck age settled, consumer built) and the age test of an
// input whose outputs may exist already (Decoded.OlderThan). A stage adds
// its own Config (with Validate applying defaults), New, ConsumerConfig
// and handler; the consume loop decides every ack.

// StageDeps are what every stage is given: JetStream on the stage's own
// connection, the publisher on it, a logger and the metrics registerer.
type StageDeps struct {
	JS         jetstream.JetStream
	Publisher  *Publisher
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// StageStart is what a stage's Run has before it consumes.
type StageStart struct {
	// Outputs are the streams the stage publishes to, by name.
	Outputs map[string]jetstream.Stream
	// Recheck is the age past which an input's outputs may be stored
	// already (see Outputs and Decoded.OlderThan).
	Recheck time.Duration
	// Consumer is the stage's durable consumer, ready to Run.
	Consumer *Consumer
}

// StartStage is the start-up of a stage's Run: the output streams looked
// up with the recheck age (Outputs, recheckAfter when set) and the
// durable consumer of cc built around h.
func StartStage(ctx context.Context, deps StageDeps, cc ConsumerConfig, recheckAfter time.Duration, h Handler, outputs ...string) (StageStart, error) {
	outs, recheck, err := Outputs(ctx, deps.JS, deps.Logger, cc, recheckAfter, outputs...)
	if err != nil {
		return StageStart{}, err
	}
	c, err := NewConsumer(cc, deps, h)
	if err != nil {
		return StageStart{}, err
	}
	return StageStart{Outputs: outs, Recheck: recheck, Consumer: c}, nil
}

// OlderThan reports whether d was stored longer than age ago: old enough
// that its outputs may already be stored by an earlier holder whose ack
// was lost, so the stage checks its outputs before producing them again.
func (d Decoded) OlderThan(age time.Duration) bool { return time.Since(d.Stored) > age }
