package injector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// Stage is the injector: a durable consumer on every detection that
// publishes exactly one task per user turn, and optionally the sidecar
// responder.
type Stage struct {
	cfg  Config
	deps Deps
	m    *metrics
}

// New builds the injector stage.
func New(cfg Config, deps Deps) (*Stage, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JS == nil || deps.Publisher == nil {
		return nil, fmt.Errorf("%w: the injector needs JetStream and a publisher", ErrInvalidConfig)
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	return &Stage{cfg: cfg, deps: deps, m: newMetrics(deps.Registerer)}, nil
}

// ConsumerConfig is the stage's durable consumer on REIN_DETECTIONS.
func (s *Stage) ConsumerConfig() streams.ConsumerConfig {
	return streams.ConsumerConfig{
		Stage: streams.StageInjector, Stream: streams.StreamDetections, Durable: streams.DurableInjector,
		Filter: []string{streams.DetectionsAll}, Workers: s.cfg.Workers,
	}
}

// Run consumes detections (and answers sidecar requests when configured)
// until ctx is cancelled, then drains both.
func (s *Stage) Run(ctx context.Context) error {
	c, err := streams.NewConsumer(s.ConsumerConfig(), streams.ConsumerDeps{JS: s.deps.JS, Publisher: s.deps.Publisher,
		Logger: s.deps.Logger, Registerer: s.deps.Registerer}, s.handle)
	if err != nil {
		return err
	}
	if !s.cfg.Sidecar {
		return c.Run(ctx)
	}
	r, err := s.startResponder(ctx)
	if err != nil {
		return err
	}
	// The responder stops when ctx ends or the consumer fails.
	cerr := c.Run(ctx)
	return errors.Join(cerr, r.stop())
}

// handle turns one detection into one task. The task id is deterministic,
// so a redelivered detection yields no second task.
func (s *Stage) handle(ctx context.Context, d streams.Decoded) error {
	if d.Event.Type() != schemas.TypeDetection {
		return streams.Permanent(fmt.Errorf("injector: unexpected event type %q on %s", d.Event.Type(), d.Subject))
	}
	var det schemas.Detection
	if err := d.Payload(&det); err != nil {
		return streams.Permanent(err)
	}
	task := TaskFor(det, d.Event.ID(), d.Meta.Turn, s.cfg.RecoveryTools)
	meta := schemas.Meta{Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation, Turn: task.Turn, Traceparent: d.Meta.Traceparent}
	ev, err := schemas.BuildEvent(schemas.TypeTask, schemas.EventID("task", meta.Tenant, meta.Conversation, task.Turn), "", meta, task)
	if err != nil {
		return streams.Permanent(fmt.Errorf("injector: build task: %w", err))
	}
	if _, err := s.deps.Publisher.Publish(ctx, streams.StreamTasks, streams.TaskSubject(meta.Tenant, meta.Conversation), &ev); err != nil {
		return err
	}
	if task.Inception != nil {
		s.m.injected(task.Inception.ErrorType)
	}
	return nil
}
