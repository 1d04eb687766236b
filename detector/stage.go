package detector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/internal/convcache"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// Config configures the detector stage.
type Config struct {
	// Domain is the agent's domain for tenants not in TenantDomains; it
	// selects the tool catalogue shown to the inception module.
	Domain        string
	TenantDomains map[string]string
	// Timeout bounds one inception call; past it the turn proceeds without
	// injection (fail-open). Default 5s.
	Timeout time.Duration
	// HistoryTurns bounds the surface context kept per conversation
	// (utterances, newest kept). Default 40.
	HistoryTurns int
	// MaxConversations bounds conversations held in memory; IdleTTL drops
	// a conversation not seen for that long. Defaults convcache.DefaultMax
	// (100,000; MaxCacheBytes binds first) and 30m. A dropped conversation
	// is rebuilt from REIN_TURNS on its next turn.
	MaxConversations int
	IdleTTL          time.Duration
	// MaxCacheBytes bounds the same conversations by size (each measured
	// as its utterances' text plus a fixed cost; default 32 MiB): a
	// history of long turns cannot hold more.
	MaxCacheBytes int64
	// Workers bounds the user turns judged at once, the stage's in-flight
	// limit (default: the consumer's, 4096). Turns are scheduled by
	// conversation, so a conversation waiting on the inception model never
	// holds up another.
	Workers int
	// InFlightBytes bounds the bytes of the delivered messages the stage
	// holds, queued or being handled (0: consume.DefaultMaxInFlightBytes,
	// 64 MiB): past it the consumer stops pulling.
	InFlightBytes int64
	// AckWait is how long a delivered turn stays owned without a heartbeat
	// before the server redelivers it — after a crash, how soon another
	// holder gets it (0: the stage's default).
	AckWait time.Duration
	// PinTTL is how soon a standby replica of the stage takes over from
	// one that crashed (0: streams.DefaultPinTTL).
	PinTTL time.Duration
	// TaxonomyVersion is recorded in every detection.
	TaxonomyVersion string
	// RecheckAfter: a user turn stored longer ago than this (or delivered
	// before without an ack) is first checked against the conversation's
	// stored detection and task (ConsumerConfig.Stored), since the
	// duplicate window may no longer hold the ids of its outputs: a durable
	// created anew reads REIN_TURNS from its start. Default: half of
	// REIN_DETECTIONS' duplicate window, read when the stage starts.
	RecheckAfter time.Duration
	// RecoveryTools maps an error type to its recovery tool for the task
	// of a detection that names none (added to
	// injector.DefaultRecoveryTools).
	RecoveryTools map[string]string
}

func (c *Config) defaults() {
	if c.Domain == "" {
		c.Domain = "airline"
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.HistoryTurns == 0 {
		c.HistoryTurns = 40
	}
	if c.MaxConversations == 0 {
		c.MaxConversations = convcache.DefaultMax
	}
	if c.MaxCacheBytes == 0 {
		c.MaxCacheBytes = DefaultCacheBytes
	}
	if c.IdleTTL == 0 {
		c.IdleTTL = 30 * time.Minute
	}
}

// Validate checks the configuration after defaults.
func (c Config) Validate() error {
	c.defaults()
	switch {
	case c.Timeout < 0 || c.HistoryTurns < 2 || c.MaxConversations < 1 || c.IdleTTL < time.Second || c.MaxCacheBytes < 0:
		return fmt.Errorf("%w: timeout, history, max conversations, cache bytes or idle TTL out of range", ErrInvalidConfig)
	case c.RecheckAfter < 0:
		return fmt.Errorf("%w: recheck-after %s must not be negative", ErrInvalidConfig, c.RecheckAfter)
	case c.TaxonomyVersion == "":
		return fmt.Errorf("%w: taxonomy version is empty", ErrInvalidConfig)
	}
	for t := range c.TenantDomains {
		if !schemas.ValidID(t) {
			return fmt.Errorf("%w: tenant %q in the domain map is not a valid id", ErrInvalidConfig, t)
		}
	}
	return nil
}

// Deps are the detector stage's collaborators.
type Deps struct {
	streams.StageDeps
	Module inception.Module
	// Tools returns the agent's tool catalogue of a domain.
	Tools func(domain string) ([]llm.Tool, error)
	// TaskKey signs every task (schemas.TaskKey), so that the agent worker
	// can tell rein's tasks from forged ones; nil publishes them unsigned.
	TaskKey *schemas.TaskKey
	// Assign, when set, draws a conversation's holdout arm
	// (experiment.Assigner.Assign), recorded on its detections.
	Assign func(tenant, conv string) experiment.Assignment
}

// Stage is the detector: a durable consumer on user turns that keeps each
// conversation's surface context, merging the agent's replies from the
// stream when the module needs them, and publishes one detection per user
// turn, with its task.
type Stage struct {
	cfg   Config
	deps  Deps
	tasks *injector.Tasks
	m     *stageMetrics
	convs *convcache.Cache[*conversation]
	tools map[string][]llm.Tool

	streamMu sync.Mutex
	streams  map[string]jetstream.Stream // looked up once each (Stage.stream)
}

// New builds the detector stage.
func New(cfg Config, deps Deps) (*Stage, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JS == nil || deps.Publisher == nil || deps.Module == nil || deps.Tools == nil {
		return nil, fmt.Errorf("%w: the detector needs JetStream, a publisher, a module and a tool catalogue", ErrInvalidConfig)
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	tasks, err := injector.NewTasks(cfg.RecoveryTools, deps.TaskKey, deps.Registerer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	s := &Stage{cfg: cfg, deps: deps, tasks: tasks, m: newStageMetrics(deps.Registerer, deps.Module),
		convs: convcache.New[*conversation](cfg.MaxConversations, cfg.IdleTTL).LimitBytes(cfg.MaxCacheBytes, (*conversation).memBytes), tools: map[string][]llm.Tool{}}
	domains := map[string]bool{cfg.Domain: true}
	for _, d := range cfg.TenantDomains {
		domains[d] = true
	}
	for d := range domains {
		t, err := deps.Tools(d)
		if err != nil {
			return nil, fmt.Errorf("%w: tools of domain %q: %v", ErrInvalidConfig, d, err)
		}
		s.tools[d] = t
	}
	return s, nil
}

// ConsumerConfig is the stage's durable consumer: user turns only (agent
// replies, from rein's agent workers or a sidecar platform, are read back
// by direct gets when a module needs them); undecodable user turns are
// quarantined to the DLQ. Creating it updates the filter of a durable made
// when the detector consumed every turn.
func (s *Stage) ConsumerConfig() consume.ConsumerConfig {
	return consume.ConsumerConfig{
		Stage: bus.StageDetector, Stream: bus.StreamTurns, Durable: bus.DurableDetector,
		Filter: []string{bus.UserTurnsAll}, MaxInFlight: s.cfg.Workers, MaxInFlightBytes: s.cfg.InFlightBytes, Quarantine: true,
		AckWait: cmp.Or(s.cfg.AckWait, max(30*time.Second, 3*s.cfg.Timeout)), PinTTL: s.cfg.PinTTL,
		Outputs: []string{bus.StreamDetections, bus.StreamTasks}, RecheckAfter: s.cfg.RecheckAfter, Stored: s.stored,
	}
}

// Run consumes until ctx is cancelled and drains.
func (s *Stage) Run(ctx context.Context) error {
	c, err := consume.NewConsumer(s.ConsumerConfig(), s.deps.StageDeps, s.handle)
	if err != nil {
		return err
	}
	defer s.convs.StartSweeper(time.Minute)()
	return c.Run(ctx)
}

func (s *Stage) domainOf(tenant string) string {
	if d, ok := s.cfg.TenantDomains[tenant]; ok {
		return d
	}
	return s.cfg.Domain
}

// handle is the stage's handler: one turn in, at most one detection out.
func (s *Stage) handle(ctx context.Context, d streams.Decoded) error {
	if d.Event.Type() != schemas.TypeTurn {
		return streams.Permanent(fmt.Errorf("detector: unexpected event type %q on %s", d.Event.Type(), d.Subject))
	}
	var turn schemas.Turn
	if err := d.Payload(&turn); err != nil {
		return streams.Permanent(err)
	}
	if want := bus.TurnSubject(d.Meta.Tenant, d.Meta.Conversation, turn.Role); want != streams.Unpartitioned(d.Subject) {
		return streams.Permanent(fmt.Errorf("detector: a %s turn on subject %s", turn.Role, d.Subject))
	}
	if turn.Role == schemas.RoleAgent {
		// Delivered only by a durable made before the filter was narrowed
		// to user turns: refresh reads it back when a user turn needs it.
		return nil
	}
	if turn.Turn == 0 {
		turn.Turn = d.Meta.Turn
	}
	if turn.Turn < 1 {
		return streams.Permanent(fmt.Errorf("detector: a user turn without a turn number (the turn extension or data.turn, from 1): it names the turn's detection, task and reply"))
	}
	meta := schemas.Meta{Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation, Turn: turn.Turn, Traceparent: d.Meta.Traceparent}
	if d.Outputs == streams.StoredSome {
		// Decided before and not all handed on: hand on what was decided,
		// never a second judgement that may differ from it.
		if det, id, ok, err := s.storedDetection(ctx, meta); err != nil || ok {
			if err == nil {
				err = s.publish(ctx, meta, det, id, false)
			}
			if err == nil {
				s.m.unjudged[UnjudgedHandedOn].Inc()
			}
			return err
		}
	}
	conv, err := s.conversation(ctx, d)
	if err != nil {
		return err // retried: the surface context could not be rebuilt
	}
	// The turn and the agent's replies merged grow the conversation.
	defer s.convs.Resize(bus.ConversationKey(d.Meta.Tenant, d.Meta.Conversation))
	if turn.Turn == conv.judged {
		// Judged and stored by this worker, now stored again as a new
		// message: a platform's retry (or, with other text, a conflict).
		// Within the duplicate window its outputs' ids would drop them;
		// past it they would be stored twice (and a second judgement could
		// differ).
		if conv.sentBefore(turn.Turn, d.Sequence) {
			if err := conv.conflict(turn); err != nil {
				return err
			}
		}
		s.m.unjudged[UnjudgedSentAgain].Inc()
		return nil
	}
	if conv.sentBefore(turn.Turn, d.Sequence) {
		// An earlier copy came as another message: a retry too, unless that
		// copy was never judged (dead-lettered, and now sent again).
		judged, err := s.detectionStored(ctx, meta.Tenant, meta.Conversation, turn.Turn)
		if err != nil {
			return err // retried
		}
		if judged {
			if err := conv.conflict(turn); err != nil {
				return err
			}
			s.m.unjudged[UnjudgedSentAgain].Inc()
			return nil
		}
	}
	conv.add(turn, d.Sequence, s.cfg.HistoryTurns)
	det, ok := conv.undelivered(turn.Turn)
	if !ok {
		domain := s.domainOf(d.Meta.Tenant)
		in := inception.Input{Tenant: d.Meta.Tenant, Domain: domain, Dialogue: conv.dialogue(), Tools: s.tools[domain]}
		if cf, ok := s.deps.Module.(inception.ContextFree); !ok || cf.NeedsContext(in) {
			if err := s.refresh(ctx, conv, d.Meta, d.Sequence); err != nil {
				return err // retried: the agent's replies could not be read
			}
			in.Dialogue = conv.dialogue()
		}
		arm, err := s.armOf(ctx, conv, meta)
		if err != nil {
			return err // retried
		}
		prev := conv.planted
		if prev.control && arm.Arm != schemas.ArmControl {
			// Control planted nothing: a turn now planted for real (the
			// holdout was killed) repeats nothing the agent saw.
			prev = planted{}
		}
		det = s.detect(ctx, d.Meta, turn, in, prev)
		s.assign(meta, arm, &det)
		// Kept until stored: a retry after a failed publish hands on this
		// decision rather than asking the module again.
		conv.pending = pendingDetection{turn: turn.Turn, det: det}
	}
	if err := s.publish(ctx, meta, det, schemas.EventID("detection", meta.Tenant, meta.Conversation, turn.Turn), true); err != nil {
		if errors.Is(err, streams.ErrPermanent) {
			// Dead-lettered: a copy sent again is judged anew, since this
			// decision may be what could not be handed on.
			conv.pending = pendingDetection{}
		}
		return err
	}
	conv.pending = pendingDetection{}
	conv.judged = max(conv.judged, turn.Turn)
	if det.Rein || strings.HasPrefix(det.FailReason, notPlantedAgain) {
		// A repeat held back extends the run: a module that keeps naming
		// the type is planted once, not every other turn.
		conv.planted = planted{turn: turn.Turn, errorType: det.ErrorType, control: det.Arm == schemas.ArmControl}
	}
	return nil
}

// notPlantedAgain starts the fail_reason of an activation held back as a
// repeat.
const notPlantedAgain = "not planted again: "

// publish stores a turn's task, with its detection under id when
// withDetection (else the detection is stored already), in one pipelined
// batch.
func (s *Stage) publish(ctx context.Context, meta schemas.Meta, det schemas.Detection, id string, withDetection bool) error {
	task, stored, err := s.tasks.Task(meta, det, id)
	if err != nil {
		return streams.Permanent(fmt.Errorf("detector: %w", err))
	}
	outs := []streams.Out{task}
	if withDetection {
		bt, err := schemas.Build(schemas.TypeDetection, id, "", meta, det)
		if err != nil {
			return streams.Permanent(fmt.Errorf("detector: build detection: %w", err))
		}
		outs = []streams.Out{{Stream: bus.StreamDetections, Subject: bus.DetectionSubject(meta.Tenant, meta.Conversation), Built: &bt}, task}
	}
	if _, err := s.deps.Publisher.PublishAll(ctx, outs...); err != nil {
		return err
	}
	stored()
	return nil
}

// detectRecovered runs the module, turning a panic into an error (its
// stack logged here, not carried into the detection): a module that breaks
// on some input fails open for that turn like one that errs, rather than
// taking the turn to the dead letters with no detection.
func (s *Stage) detectRecovered(ctx context.Context, mod inception.Module, meta schemas.Meta, in inception.Input) (dec inception.Decision, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrModulePanic, r)
			s.deps.Logger.Error("inception module panicked; turn proceeds without injection", "tenant", meta.Tenant,
				"conversation", meta.Conversation, "turn", meta.Turn, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	return mod.Detect(ctx, in)
}

// detect runs the module under the deadline and fails open. An
// activation repeating the error planted at the turn before (prev) is
// recorded but not planted again.
func (s *Stage) detect(ctx context.Context, meta schemas.Meta, turn schemas.Turn, in inception.Input, prev planted) schemas.Detection {
	start := time.Now()
	var dec inception.Decision
	var err error
	// The module in place now (a Live's may be swapped) judges the turn.
	mod := inception.Current(s.deps.Module)
	if im, ok := mod.(inception.Instant); ok && im.Instant() {
		dec, err = s.detectRecovered(ctx, mod, meta, in)
	} else {
		mctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		dec, err = s.detectRecovered(mctx, mod, meta, in)
		cancel()
	}
	elapsed := time.Since(start)
	s.m.inception.Observe(elapsed.Seconds())
	det := schemas.Detection{
		Turn: turn.Turn, UserText: turn.Text, Module: s.deps.Module.Name(), LatencyMS: float64(elapsed.Microseconds()) / 1000,
		TaxonomyVersion: s.cfg.TaxonomyVersion,
	}
	if err != nil {
		// Fail open: the turn proceeds without injection.
		det.Failed, det.FailReason = true, inception.FailReason(err)
		if !errors.Is(err, ErrModulePanic) { // logged with its stack already
			s.deps.Logger.Warn("inception failed; turn proceeds without injection", "tenant", meta.Tenant, "err", err)
		}
	} else {
		det.Rein, det.ErrorType, det.Category, det.RecoveryTool = dec.Rein, dec.ErrorType, dec.Category, dec.RecoveryTool
		det.Evidence, det.Reasoning, det.Model, det.Tokens = dec.Evidence, dec.Reasoning, dec.Model, dec.Tokens
		det.ModelVersion = dec.ModelVersion
		det.Failed, det.FailReason = dec.Failed, dec.FailReason
		if dec.TaxonomyVersion != "" {
			det.TaxonomyVersion = dec.TaxonomyVersion
		}
		if det.Rein && (det.ErrorType == "" || det.Reasoning == "") {
			det.Rein, det.Failed, det.FailReason = false, true, "module activated without an error type or reasoning"
		}
		if det.Rein && prev.repeats(turn.Turn, det.ErrorType) {
			// Kept as the module's decision (type, evidence) with no plant.
			det.Rein, det.FailReason = false, fmt.Sprintf(notPlantedAgain+"%s was named at turn %d too and the agent has answered it with the plan", det.ErrorType, prev.turn)
			s.m.repeats.WithLabelValues(det.ErrorType).Inc()
		}
	}
	tenant := s.m.tenant(meta.Tenant)
	switch {
	case det.Failed:
		s.m.decisions.WithLabelValues(tenant, "failed").Inc()
	case det.Rein:
		s.m.decisions.WithLabelValues(tenant, "activated").Inc()
		s.m.activations.WithLabelValues(tenant, det.ErrorType).Inc()
	default:
		s.m.decisions.WithLabelValues(tenant, "clear").Inc()
	}
	return det
}
