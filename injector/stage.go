package injector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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

	mu    sync.Mutex
	tasks jetstream.Stream // REIN_TASKS, looked up on first use (TaskStored)
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
		Filter: []string{streams.DetectionsEach}, MaxInFlight: s.cfg.Workers, AckWait: s.cfg.AckWait, PinTTL: s.cfg.PinTTL,
		Outputs: []string{streams.StreamTasks}, RecheckAfter: s.cfg.RecheckAfter, Stored: s.stored,
	}
}

// stored tells the consume loop whether a detection's task is stored
// already, perhaps by another replica.
func (s *Stage) stored(ctx context.Context, _ streams.OutputStreams, d streams.Decoded) (streams.Stored, error) {
	var det schemas.Detection
	if d.Event.Type() != schemas.TypeDetection || d.Payload(&det) != nil || taskTurn(det, d.Meta.Turn) < 1 {
		return streams.StoredNone, nil // the handler rejects it
	}
	ok, err := s.TaskStored(ctx, d.Meta.Tenant, d.Meta.Conversation, taskTurn(det, d.Meta.Turn), d.Stored)
	if ok {
		return streams.StoredAll, err
	}
	return streams.StoredNone, err
}

// Run consumes detections (and answers sidecar requests when configured)
// until ctx is cancelled, then drains both. A fused stage (Config.Fused)
// runs only the responder: its detector publishes the tasks.
func (s *Stage) Run(ctx context.Context) error {
	var c *streams.Consumer
	if !s.cfg.Fused {
		var err error
		if c, err = streams.NewConsumer(s.ConsumerConfig(), s.deps.StageDeps, s.handle); err != nil {
			return err
		}
	}
	consume := func() error {
		if c == nil {
			<-ctx.Done()
			return nil
		}
		return c.Run(ctx)
	}
	if !s.cfg.Sidecar {
		return consume()
	}
	r, err := s.startResponder(ctx)
	if err != nil {
		return err
	}
	// The responder stops when ctx ends or the consumer fails.
	cerr := consume()
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
	out, stored, err := s.Task(d.Meta, det, d.Event.ID())
	if err != nil {
		return streams.Permanent(err)
	}
	if _, err := s.deps.Publisher.PublishAll(ctx, out); err != nil {
		return err
	}
	stored()
	return nil
}

// Task builds the task of one detection's user turn: the event to publish
// (deterministic id task.<tenant>.<conv>.<turn>) and a func to call once it
// is stored, which counts the injection. The stage's own consumer uses it,
// and so does a detector fused with the stage (Config.Fused), which
// publishes the task in one batch with the detection. meta is the
// detection's.
func (s *Stage) Task(meta schemas.Meta, det schemas.Detection, detectionID string) (streams.Out, func(), error) {
	task := TaskFor(det, detectionID, meta.Turn, s.cfg.RecoveryTools)
	if task.Turn < 1 {
		return streams.Out{}, nil, fmt.Errorf("injector: a detection without a turn number (data.turn or the turn extension, from 1)")
	}
	meta.Turn = task.Turn
	ev, err := schemas.BuildEvent(schemas.TypeTask, schemas.EventID("task", meta.Tenant, meta.Conversation, task.Turn), "", meta, task)
	if err != nil {
		return streams.Out{}, nil, fmt.Errorf("injector: build task: %w", err)
	}
	if s.deps.TaskKey != nil {
		if err := s.deps.TaskKey.Sign(&ev); err != nil {
			return streams.Out{}, nil, fmt.Errorf("injector: sign task: %w", err)
		}
	}
	stored := func() {}
	if task.Inception != nil {
		stored = func() { s.m.injected(task.Inception.ErrorType) }
	}
	return streams.Out{Stream: streams.StreamTasks, Subject: streams.TaskSubject(meta.Tenant, meta.Conversation), Event: &ev}, stored, nil
}

// TaskStored tells whether REIN_TASKS already holds the task of a user
// turn (streams.TurnStored): the conversation's last task being of this
// turn says so at once; being of a later turn, this turn's own is looked
// for, since a later turn that overtook this one (the order gate's
// MaxHold) proves nothing about it. since is when the turn's detection
// (fused: its user turn) was stored; zero when unknown. The stage asks it
// for detections older than Config.RecheckAfter, and a detector fused with
// the stage for user turns older than its own or delivered again.
func (s *Stage) TaskStored(ctx context.Context, tenant, conv string, turn int, since time.Time) (bool, error) {
	tasks, err := s.taskStream(ctx)
	if err != nil {
		return false, err
	}
	_, found, err := streams.TurnStored(ctx, s.deps.JS, tasks, streams.TaskSubject(tenant, conv), turn, since)
	if err != nil {
		return false, fmt.Errorf("injector: %w", err)
	}
	return found, nil
}

// taskStream is REIN_TASKS, looked up once.
func (s *Stage) taskStream(ctx context.Context) (jetstream.Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks == nil {
		st, err := s.deps.JS.Stream(ctx, streams.StreamTasks)
		if err != nil {
			return nil, fmt.Errorf("injector: stream %s: %w", streams.StreamTasks, err)
		}
		s.tasks = st
	}
	return s.tasks, nil
}
