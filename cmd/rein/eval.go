package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/internal/app/demo"
	"github.com/reinception/rein/internal/app/eval/run"
	"github.com/reinception/rein/internal/app/pipeline"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// This file is the only place where `rein eval run` meets rein's runtime:
// it implements run.Starter with startRuntime and runStages (flags.go,
// over internal/app/pipeline), exactly as `rein serve` starts them
// (embedded JetStream, every stage of the binary), and reads each turn's
// outcome back from the streams with the demo's collector.

// evalTenant is the tenant of every evaluation conversation.
const evalTenant = "eval"

// evalRuntime holds what every evaluation pipeline shares.
type evalRuntime struct {
	logLevel        string
	detectorTimeout time.Duration
	maxSteps        int
}

// starter returns the run.Starter of this binary.
func (e evalRuntime) starter() run.Starter {
	return func(ctx context.Context, spec run.Spec) (run.Pipeline, error) {
		dir := spec.StorageDir
		var err error
		if dir == "" {
			dir, err = os.MkdirTemp("", "rein-eval-")
		} else {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			return nil, err
		}
		sf := &serverFlags{dataDir: dir, logLevel: e.logLevel}
		file, _ := loadFileConfig("")
		rt, err := startRuntime(ctx, sf, file, "rein-eval-"+spec.Condition)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		rt.stages = &stageOptions{Stages: pipeline.Stages{
			Detector: detector.Config{Domain: spec.Domain, Timeout: e.detectorTimeout, TaxonomyVersion: spec.TaxonomyVersion},
			AgentWorker: agentworker.Config{Domain: spec.Domain, DataDir: spec.DataDir, Backend: agentworker.BackendDomain,
				Persist: agentworker.PersistStep, MaxSteps: e.maxSteps, SystemPrompt: spec.SystemPrompt},
			Given: pipeline.Given{Module: spec.Module, AgentModel: spec.Agent},
		}}
		col, err := demo.NewCollector(rt.NC, evalTenant)
		if err != nil {
			rt.Close()
			os.RemoveAll(dir)
			return nil, err
		}
		names, _ := pipeline.ResolveStages([]string{"all"})
		sctx, cancel := context.WithCancel(context.Background())
		p := &evalPipeline{rt: rt, col: col, dir: dir, cond: spec.Condition + " " + spec.Domain, refillEvery: demo.RefillEvery,
			cancel: cancel, done: make(chan error, 1)}
		go func() { p.done <- runStages(sctx, rt, names) }()
		if evalPipelineStarted != nil {
			evalPipelineStarted(p)
		}
		return p, nil
	}
}

// evalPipelineStarted, when set (by a test), is called with every
// pipeline the starter starts.
var evalPipelineStarted func(*evalPipeline)

// evalPipeline is one running pipeline of `rein eval run`.
type evalPipeline struct {
	rt   *proc
	col  *demo.Collector
	dir  string
	cond string // condition and domain, for reports
	// refillEvery is how long a turn waits for its outcome on the
	// collector's subscription before reading the streams.
	refillEvery time.Duration
	cancel      context.CancelFunc
	done        chan error
	// keep is set when a turn got no outcome: Close then leaves the
	// JetStream store in dir as evidence.
	keep atomic.Bool
}

// Turn publishes the user turn to REIN_TURNS, as a platform does, and
// waits until the agent worker stored its reply (or the turn ended
// without one), then reads everything the stages produced for it.
func (p *evalPipeline) Turn(ctx context.Context, conv string, turn int, text string) (run.Outcome, error) {
	col := p.col
	col.Sent(conv, turn, text)
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", evalTenant, conv, turn)+"-user", "/rein/eval",
		schemas.Meta{Tenant: evalTenant, Conversation: conv, Turn: turn}, schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: turn})
	if err == nil {
		_, err = p.rt.Pub.Publish(ctx, streams.StreamTurns, streams.TurnSubject(evalTenant, conv, schemas.RoleUser), &ev)
	}
	if err != nil {
		return run.Outcome{}, fmt.Errorf("publish user turn: %w", err)
	}
	done := func(t *demo.Turn) bool {
		return t.Unanswered != nil ||
			(t.Escalated != nil && t.Escalated.Reason == schemas.ReasonAgentUnavailable) ||
			(t.Reply != nil && hasReplyStep(t.Steps))
	}
	t, why, err := col.WaitRead(ctx, p.rt.JS, conv, turn, p.refillEvery, done, func(events int, err error) {
		// The subscription is at most once: a connection the server
		// dropped as a slow consumer loses what was sent meanwhile.
		p.rt.Log.Error("the outcome collector had not heard events the streams store; read them from the streams",
			"conversation", conv, "turn", turn, "events", events, "err", err, "connections", p.rt.Connections())
	})
	if why != "" {
		return run.Outcome{}, fmt.Errorf("dead-lettered: %s", why)
	}
	if err != nil {
		p.keep.Store(true)
		return run.Outcome{}, fmt.Errorf("no outcome: %w (pipeline %s, store kept in %s)\n%s", err, p.cond, p.dir, p.stuck(conv, turn, &t))
	}
	return outcomeOf(&t), nil
}

func hasReplyStep(steps []schemas.Step) bool {
	for _, s := range steps {
		if s.Kind == schemas.StepReply {
			return true
		}
	}
	return false
}

// outcomeOf turns what the collector gathered for a turn into the
// runner's Outcome.
func outcomeOf(t *demo.Turn) run.Outcome {
	var out run.Outcome
	if t.Reply != nil {
		out.Reply, out.Replied = t.Reply.Text, true
	}
	if d := t.Detection; d != nil {
		out.Detection = run.Detection{Rein: d.Rein, ErrorType: d.ErrorType, Tokens: d.Tokens, LatencyMs: d.LatencyMS,
			Failed: d.Failed, Module: d.Module, Model: d.Model}
	}
	if t.Task != nil {
		out.Injected = t.Task.Inception != nil
		if !t.TaskAt.IsZero() {
			rein := t.TaskAt.Sub(t.Sent) - time.Duration(out.Detection.LatencyMs*float64(time.Millisecond))
			out.ReinLatency = max(rein, 0)
		}
	}
	if e := t.Escalated; e != nil {
		out.Escalated, out.EscalationReason = true, e.Reason
	}
	steps := append([]schemas.Step(nil), t.Steps...)
	sort.Slice(steps, func(a, b int) bool { return steps[a].Step < steps[b].Step })
	// A step published twice (a redelivery) reaches the subscription twice.
	steps = slices.CompactFunc(steps, func(a, b schemas.Step) bool { return a.Step == b.Step })
	results := map[string]string{}
	for _, s := range steps {
		if s.Kind == schemas.StepToolResult {
			results[s.CallID] = s.Output
		}
	}
	for _, s := range steps {
		if s.Kind == schemas.StepToolCall {
			out.Calls = append(out.Calls, run.Call{Name: s.Name, Arguments: json.RawMessage(s.Arguments), Output: results[s.CallID]})
		}
	}
	return out
}

// Close stops the stages, then the server, and removes its storage
// unless a turn got no outcome.
func (p *evalPipeline) Close() error {
	p.cancel()
	err := <-p.done
	p.col.Close()
	p.rt.Close()
	if p.keep.Load() {
		p.rt.Log.Error("a turn got no outcome: the pipeline's JetStream store is kept", "dir", p.dir)
	} else if rerr := os.RemoveAll(p.dir); err == nil {
		err = rerr
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
