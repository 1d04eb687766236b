package escalation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// Config configures the escalation stage.
type Config struct {
	Sinks SinksConfig
	// AckWait is how long a delivered turn stays owned without a heartbeat
	// before the server redelivers it — after a crash, how soon another
	// holder gets it (0: the stage's default).
	AckWait time.Duration
	// PinTTL is how soon a standby replica of the stage takes over from
	// one that crashed (0: streams.DefaultPinTTL).
	PinTTL time.Duration
	// Workers bounds the events delivered at once (default 16): sinks are
	// remote systems, kept to a modest concurrency.
	Workers int
	// InFlightBytes bounds the bytes of the delivered messages the stage
	// holds, queued or being handled (0: consume.DefaultMaxInFlightBytes,
	// 64 MiB): past it the consumer stops pulling.
	InFlightBytes int64
}

func (c *Config) defaults() {
	if c.Workers == 0 {
		c.Workers = 16
	}
}

// Validate checks the configuration after defaults are applied.
func (c Config) Validate() error {
	c.defaults()
	if c.Workers < 0 {
		return fmt.Errorf("%w: workers must not be negative", ErrInvalidConfig)
	}
	return c.Sinks.Validate()
}

// Deps are the stage's collaborators.
type Deps struct {
	streams.StageDeps
}

// Stage consumes escalations, reports, unanswered records and releases
// from REIN_OUTCOMES and delivers
// each to every configured sink. A sink that already took an event is not
// given it again when another sink's failure makes the event retry.
type Stage struct {
	cfg     Config
	deps    Deps
	metrics *Metrics
	sinks   []Sink

	mu        sync.Mutex
	delivered map[string]map[string]bool // event id → sinks done, while retrying

	turnsMu sync.Mutex
	turns   jetstream.Stream // REIN_TURNS, looked up by the first transcript
}

// New builds the stage and its sinks.
func New(cfg Config, deps Deps) (*Stage, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JS == nil || deps.Publisher == nil {
		return nil, fmt.Errorf("%w: the escalation stage needs JetStream and a publisher", ErrInvalidConfig)
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	m := NewMetrics(deps.Registerer)
	s := &Stage{cfg: cfg, deps: deps, metrics: m, delivered: map[string]map[string]bool{}}
	var err error
	s.sinks, err = BuildSinks(cfg.Sinks, SinkDeps{JetStream: deps.JS, Publisher: deps.Publisher, Logger: deps.Logger, Metrics: m,
		Transcript: s.transcript})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ConsumerConfig is the stage's durable consumer on REIN_OUTCOMES.
func (s *Stage) ConsumerConfig() consume.ConsumerConfig {
	return consume.ConsumerConfig{
		Stage: bus.StageEscalation, Stream: bus.StreamOutcomes, Durable: bus.DurableEscalation,
		Filter: []string{bus.EscalationsAll, bus.ReportsAll, bus.UnansweredAll, bus.ReleasesAll}, MaxInFlight: s.cfg.Workers, MaxInFlightBytes: s.cfg.InFlightBytes,
		AckWait: cmp.Or(s.cfg.AckWait, 2*time.Minute), // webhook retries can take a while; heartbeats keep it owned
		PinTTL:  s.cfg.PinTTL,
		// An event about to be dead-lettered — its attempts spent, a sink
		// panicked, or one failed for good — is done with: forget which
		// sinks took it, or delivered grows by one entry per dead letter.
		OnDeadLetter: func(_ context.Context, d streams.Decoded, _ error) error {
			s.forget(d.Event.ID())
			return nil
		},
	}
}

// Run consumes until ctx is cancelled, then closes (flushes) the sinks.
func (s *Stage) Run(ctx context.Context) error {
	defer func() {
		for _, sk := range s.sinks {
			if err := sk.Close(); err != nil {
				s.deps.Logger.Warn("closing sink", "sink", sk.Name(), "err", err)
			}
		}
	}()
	if err := s.ensureDesktops(ctx); err != nil {
		return err
	}
	c, err := consume.NewConsumer(s.ConsumerConfig(), s.deps.StageDeps, s.handle)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// ensureDesktops creates the desktops' durable consumer on REIN_HANDOFF
// when a handoff sink is configured, so that a desktop in any language can
// claim items from the start (Claim creates it too, but only Go desktops
// call Claim).
func (s *Stage) ensureDesktops(ctx context.Context) error {
	for _, sk := range s.sinks {
		if _, ok := sk.(*Handoff); !ok {
			continue
		}
		stream, err := s.deps.JS.Stream(ctx, bus.StreamHandoff)
		if err != nil {
			return fmt.Errorf("handoff sink: stream %s: %w", bus.StreamHandoff, err)
		}
		_, err = ensureDesktopConsumer(ctx, stream, stream.CachedInfo().Config.Replicas)
		return err
	}
	return nil
}

func (s *Stage) handle(ctx context.Context, d streams.Decoded) error {
	switch d.Event.Type() {
	case schemas.TypeEscalation:
		e, err := deliverAs[schemas.Escalation](ctx, s, d)
		if err != nil {
			return err
		}
		s.metrics.ObserveEscalation(e.Reason, e.ErrorType)
	case schemas.TypeReport:
		r, err := deliverAs[schemas.Report](ctx, s, d)
		if err != nil {
			return err
		}
		s.metrics.ObserveReport(r.ErrorType)
	case schemas.TypeUnanswered:
		// A turn the agent did not answer (failed, superseded, or on the
		// human path of a conversation handed to a human): the platform
		// hears of it like an escalation, the handoff desk of a human_path
		// turn.
		u, err := deliverAs[schemas.Unanswered](ctx, s, d)
		if err != nil {
			return err
		}
		s.metrics.ObserveUnanswered(u.Reason)
	case schemas.TypeRelease:
		// A conversation given back to the agent: the audit trail and the
		// platform hear of it.
		_, err := deliverAs[schemas.Release](ctx, s, d)
		return err
	default:
		return streams.Permanent(fmt.Errorf("escalation: unexpected event type %q", d.Event.Type()))
	}
	return nil
}

// deliverAs decodes the event's payload as T (one that does not decode is
// dead-lettered) and delivers the event to the sinks.
func deliverAs[T any](ctx context.Context, s *Stage, d streams.Decoded) (T, error) {
	var v T
	if err := d.Payload(&v); err != nil {
		return v, streams.Permanent(err)
	}
	return v, s.deliver(ctx, d)
}

// deliver hands the event to every sink that has not taken it yet. A final
// sink failure dead-letters the event (after the other sinks have it).
func (s *Stage) deliver(ctx context.Context, d streams.Decoded) error {
	id := d.Event.ID()
	var transient, final error
	for _, sk := range s.sinks {
		if s.done(id, sk.Name()) {
			continue
		}
		if err := sk.Deliver(ctx, *d.Event); err != nil {
			if errors.Is(err, ErrDeliveryFailed) {
				final = err
			} else {
				transient = err
			}
			continue
		}
		s.markDone(id, sk.Name())
	}
	// A buffering sink (jsonl) must have the event on disk before the
	// message is acked.
	for _, sk := range s.sinks {
		if f, ok := sk.(Flusher); ok && s.done(id, sk.Name()) {
			if err := f.Flush(); err != nil {
				transient = err
			}
		}
	}
	switch {
	case transient != nil:
		return fmt.Errorf("escalation: %w", transient)
	case final != nil:
		s.forget(id)
		return streams.Permanent(final)
	}
	s.forget(id)
	return nil
}

func (s *Stage) done(id, sink string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered[id][sink]
}

func (s *Stage) markDone(id, sink string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.delivered[id] == nil {
		s.delivered[id] = map[string]bool{}
	}
	s.delivered[id][sink] = true
}

func (s *Stage) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.delivered, id)
}

// transcript reads a conversation's surface dialogue from REIN_TURNS for
// the handoff sink, with batched direct gets of its literal subjects (no
// consumer is created).
func (s *Stage) transcript(ctx context.Context, tenant, conv string) ([]TranscriptLine, error) {
	turns, err := s.turnsStream(ctx)
	if err != nil {
		return nil, fmt.Errorf("escalation: transcript: %w", err)
	}
	var out []TranscriptLine
	err = streams.ReadConversationTurns(ctx, s.deps.JS, turns, tenant, conv, 0, func(r streams.Raw) error {
		if r.Decoded == nil {
			return nil
		}
		var t schemas.Turn
		if err := r.Decoded.Payload(&t); err == nil {
			out = append(out, TranscriptLine{Turn: t.Turn, Role: t.Role, Text: t.Text})
		}
		return nil
	})
	return out, err
}

// turnsStream is REIN_TURNS, looked up once (a failed lookup is tried
// again by the next transcript).
func (s *Stage) turnsStream(ctx context.Context) (jetstream.Stream, error) {
	s.turnsMu.Lock()
	defer s.turnsMu.Unlock()
	if s.turns == nil {
		st, err := s.deps.JS.Stream(ctx, bus.StreamTurns)
		if err != nil {
			return nil, err
		}
		s.turns = st
	}
	return s.turns, nil
}
