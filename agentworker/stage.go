package agentworker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/convcache"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// Stage is the agent worker: a durable consumer on REIN_TASKS that runs
// the task agent for each user turn.
type Stage struct {
	cfg      Config
	deps     Deps
	system   string
	backend  Backend
	tools    []llm.Tool
	declared map[string]bool
	m        *metrics
	cache    *convcache.Cache[*State]
	store    store
	fresh    []byte                // the overlay of a new conversation (not stored)
	spec     *speculator           // Config.Speculate
	outputs  streams.OutputStreams // the consumer's Outputs, looked up by Run
	// lastUnavailable is when (unix ns) this worker last handed a turn to
	// a human agent_unavailable (Config.QuietPeriod).
	lastUnavailable atomic.Int64
}

// New builds the agent-worker stage: it reads the system prompt, opens the
// tool backend and checks its collaborators. With Backend "none" only the
// configuration is checked.
func New(cfg Config, deps Deps) (*Stage, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	s := &Stage{cfg: cfg, deps: deps, cache: convcache.New[*State](cfg.MaxConversations, cfg.IdleTTL).LimitBytes(cfg.MaxCacheBytes, (*State).memBytes)}
	if cfg.Backend == BackendNone && deps.Backend == nil {
		return s, nil
	}
	if deps.JS == nil || deps.Publisher == nil || deps.Model == nil {
		return nil, fmt.Errorf("%w: the agent worker needs JetStream, a publisher and a model", ErrInvalidConfig)
	}
	var err error
	if s.system, err = cfg.systemPrompt(); err != nil {
		return nil, err
	}
	if s.backend, err = openBackend(cfg, deps); err != nil {
		return nil, err
	}
	fresh, err := s.backend.Open(nil)
	if err != nil {
		return nil, err
	}
	if s.fresh, err = fresh.State(); err != nil {
		return nil, fmt.Errorf("agentworker: backend state: %w", err)
	}
	s.tools = catalogue(s.backend.Tools())
	s.declared = map[string]bool{}
	for _, t := range s.tools {
		s.declared[t.Name] = true
	}
	s.m = newMetrics(deps.Registerer, s.declared)
	if cfg.Speculate {
		s.spec = newSpeculator(s, deps.Registerer)
	}
	return s, nil
}

func openBackend(cfg Config, deps Deps) (Backend, error) {
	if deps.Backend != nil {
		return deps.Backend, nil
	}
	switch cfg.Backend {
	case BackendHTTP:
		return NewHTTPBackend(cfg.HTTP)
	default:
		d := deps.Domain
		if cfg.DataDir != "" {
			var err error
			if d, err = taubench.Load(cfg.Domain, cfg.DataDir); err != nil {
				return nil, fmt.Errorf("%w: load domain %s from %s: %w", ErrInvalidConfig, cfg.Domain, cfg.DataDir, err)
			}
		}
		if d == nil {
			var err error
			if d, err = taubench.Sample(cfg.Domain); err != nil {
				return nil, fmt.Errorf("%w: sample domain %s: %w", ErrInvalidConfig, cfg.Domain, err)
			}
		}
		return NewDomainBackend(d), nil
	}
}

// Tools is the catalogue the model is offered: the backend's tools and
// the recovery tools.
func (s *Stage) Tools() []llm.Tool { return s.tools }

// ConsumerConfig is the stage's durable consumer on REIN_TASKS.
func (s *Stage) ConsumerConfig() consume.ConsumerConfig {
	return consume.ConsumerConfig{
		Stage: bus.StageAgentWorker, Stream: bus.StreamTasks, Durable: bus.DurableAgentWorker,
		Filter: []string{bus.TasksEach}, MaxInFlight: s.cfg.Workers, MaxInFlightBytes: s.cfg.InFlightBytes, OnDeadLetter: s.deadLettered,
		AckWait: cmp.Or(s.cfg.AckWait, max(30*time.Second, s.cfg.ModelTimeout/2)), PinTTL: s.cfg.PinTTL,
		// The agent replies (REIN_TURNS) tell whether a turn was answered.
		Outputs: []string{bus.StreamTurns, bus.StreamSteps, bus.StreamOutcomes}, RecheckAfter: s.cfg.RecheckAfter,
		Stored: s.stored,
	}
}

// Run consumes tasks until ctx is cancelled and drains. In sidecar mode
// (Backend "none") it consumes nothing and returns when ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	if s.backend == nil {
		s.deps.Logger.Info("agent worker in sidecar mode: tasks are left to the platform's agent")
		<-ctx.Done()
		return nil
	}
	st, err := openStore(ctx, s.deps.JS)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return nil
		}
		return err
	}
	if s.deps.Now != nil {
		st.now = s.deps.Now
	}
	s.store = st
	cc := s.ConsumerConfig()
	s.outputs = streams.OutputStreams{}
	for _, name := range cc.Outputs {
		if s.outputs[name], err = s.deps.JS.Stream(ctx, name); err != nil {
			return fmt.Errorf("agentworker: stream %s: %w", name, err)
		}
	}
	c, err := consume.NewConsumer(cc, s.deps.StageDeps, s.handle)
	if err != nil {
		return err
	}
	if s.spec != nil {
		sub, err := s.spec.subscribe(s.deps.JS.Conn())
		if err != nil {
			return fmt.Errorf("agentworker: speculation: %w", err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	defer s.cache.StartSweeper(time.Minute)()
	return c.Run(ctx)
}
