package agentworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

func TestStepEventsModeIsValidated(t *testing.T) {
	for mode, ok := range map[string]bool{"": true, agentworker.StepEventsStep: true, agentworker.StepEventsTurn: true, "batch": false} {
		if err := (agentworker.Config{StepEvents: mode}).Validate(); (err == nil) != ok {
			t.Errorf("StepEvents %q: Validate = %v, want ok=%v", mode, err, ok)
		}
	}
}

// stepEvents is what REIN_STEPS holds for a conversation: the singles and
// the batches, in stored order.
func stepEvents(t *testing.T, h *rtest.JS, conv string) (singles []schemas.Step, batches []schemas.Steps, ids []string) {
	t.Helper()
	for _, e := range readAll(t, h, bus.StreamSteps, bus.StepSubject(tenant, conv)) {
		ids = append(ids, e.id)
		switch e.typ {
		case schemas.TypeStep:
			var s schemas.Step
			if err := json.Unmarshal(e.data, &s); err != nil {
				t.Fatal(err)
			}
			singles = append(singles, s)
		case schemas.TypeSteps:
			if err := schemas.Validate(schemas.TypeSteps, e.data); err != nil {
				t.Errorf("stored %s does not validate: %v", e.data, err)
			}
			var b schemas.Steps
			if err := json.Unmarshal(e.data, &b); err != nil {
				t.Fatal(err)
			}
			batches = append(batches, b)
		default:
			t.Fatalf("unexpected %s on the steps subject", e.typ)
		}
	}
	return singles, batches, ids
}

// In "turn" mode a quick turn stores its steps as one event, with exactly
// the steps "step" mode stores one by one; the other outputs are the same.
func TestQuickTurnStoresOneStepsEvent(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	inc := &schemas.Inception{Thought: "Ask which reservation.", ErrorType: "anaphora", RecoveryTool: schemas.ToolAmbiguityReport}
	for _, mode := range []string{agentworker.StepEventsStep, agentworker.StepEventsTurn} {
		_, stop := startWorker(t, h, agentworker.Config{StepEvents: mode, LiveStepsAfter: time.Hour}, agentworker.Deps{Model: scripted(t)})
		publishTask(t, h, mode, 1, "show reservation Q7RM2K", nil)
		publishTask(t, h, mode, 2, "cancel that one", inc)
		rtest.CheckFor(t, wait, "two replies", func() bool { return len(agentTurns(t, h, mode)) == 2 })
		settled(t, h)
		stop()
	}
	want, none, _ := stepEvents(t, h, agentworker.StepEventsStep)
	if len(want) < 4 || len(none) != 0 {
		t.Fatalf("step mode stored %d singles and %d batches", len(want), len(none))
	}
	singles, batches, ids := stepEvents(t, h, agentworker.StepEventsTurn)
	if len(singles) != 0 || len(batches) != 2 {
		t.Fatalf("turn mode stored %d singles and %d batches, want 0 and 2 (one per turn)", len(singles), len(batches))
	}
	var got []schemas.Step
	for i, b := range batches {
		if b.Turn != i+1 || ids[i] != schemas.StepsEventID(tenant, agentworker.StepEventsTurn, i+1) {
			t.Errorf("batch %d: turn %d id %s", i, b.Turn, ids[i])
		}
		got = append(got, b.Steps...)
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("batched steps differ from the singles:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if a, b := outcomes(t, h, agentworker.StepEventsStep), outcomes(t, h, agentworker.StepEventsTurn); len(a) != len(b) {
		t.Errorf("outcomes: step mode %d, turn mode %d", len(a), len(b))
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("DLQ = %d", n)
	}
}

// A turn that runs past LiveStepsAfter publishes single steps as it goes,
// to its end (its reply step too), in either mode.
func TestSlowTurnStoresSingleSteps(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	// Every turn with a tool step has run longer than a nanosecond by then.
	startWorker(t, h, agentworker.Config{StepEvents: agentworker.StepEventsTurn, LiveStepsAfter: time.Nanosecond}, agentworker.Deps{Model: scripted(t)})
	publishTask(t, h, "slow", 1, "show reservation Q7RM2K", nil)
	rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "slow")) == 1 })
	settled(t, h)
	singles, batches, _ := stepEvents(t, h, "slow")
	if len(batches) != 0 || len(singles) != 3 || singles[2].Kind != schemas.StepReply {
		t.Errorf("a slow turn stored %d batches and singles %+v, want its 3 singles only", len(batches), singles)
	}
	if s, ok := storedState(t, h, "slow"); !ok || !s.LiveSteps {
		t.Errorf("stored state does not say the turn went live: %+v", s)
	}
}

// A turn that went live, killed mid-turn, stays live when resumed by a
// worker for which the rest of the turn is quick: the mark is stored
// before its first single step is published (with Persist "turn" too,
// which otherwise writes only at the turn's end), so the steps are never
// sent a second time as a batch.
func TestResumedLiveTurnKeepsSingleSteps(t *testing.T) {
	for _, persist := range []string{agentworker.PersistStep, agentworker.PersistTurn} {
		t.Run(persist, func(t *testing.T) {
			h := rtest.StartJetStream(t, "")
			get := llm.Response{ToolCalls: []llm.ToolCall{call("c1", "get_reservation_details", `{"reservation_id":"Q7RM2K"}`)}}
			workerA := startKillable(t, h, agentworker.Config{StepEvents: agentworker.StepEventsTurn, Persist: persist, LiveStepsAfter: time.Nanosecond},
				func(req llm.Request) (llm.Response, bool) { return get, !lastIsTool(req, "get_reservation_details") })
			publishTask(t, h, "resumed", 1, "show Q7RM2K", nil)
			workerA.killAtCrash(t)
			if singles, _, _ := stepEvents(t, h, "resumed"); len(singles) != 2 {
				t.Fatalf("before the crash: %d single steps, want the call and its result", len(singles))
			}
			model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
				return llm.Response{Content: "Confirmed."}, nil
			})
			startWorker(t, h, agentworker.Config{StepEvents: agentworker.StepEventsTurn, Persist: persist, LiveStepsAfter: time.Hour}, agentworker.Deps{Model: model})
			rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "resumed")) == 1 })
			settled(t, h)
			singles, batches, _ := stepEvents(t, h, "resumed")
			if len(batches) != 0 || len(singles) != 3 || singles[2].Kind != schemas.StepReply {
				t.Errorf("after the resume: %d batches, singles %+v; want the 3 singles only", len(batches), singles)
			}
		})
	}
}

// gateJS holds the asynchronous publishes to subjects under prefix: the
// first one reached signals, and each waits for release, then fails, as
// a killed worker's would.
type gateJS struct {
	jetstream.JetStream
	prefix           string
	reached, release chan struct{}
	once             sync.Once
}

func (g *gateJS) PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if strings.HasPrefix(msg.Subject, g.prefix) {
		g.once.Do(func() { close(g.reached) })
		<-g.release
		return nil, errors.New("worker killed")
	}
	return g.JetStream.PublishMsgAsync(msg, opts...)
}

// A worker killed after the end-of-turn State is written and before the
// turn's publish completes (nothing of it stored; or the batch stored and
// the reply not) leaves exactly one batch once the turn is resumed.
func TestKilledBeforeThePublishLeavesOneBatch(t *testing.T) {
	for _, gate := range []string{"rein.steps.", "rein.turns."} {
		t.Run(strings.TrimSuffix(gate, "."), func(t *testing.T) {
			h := rtest.StartJetStream(t, "")
			cfg := agentworker.Config{StepEvents: agentworker.StepEventsTurn, LiveStepsAfter: time.Hour, SystemPrompt: prompt}
			js := &gateJS{JetStream: h.JS, prefix: gate, reached: make(chan struct{}), release: make(chan struct{})}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, err := agentworker.New(cfg, agentworker.Deps{
				StageDeps: streams.StageDeps{JS: h.JS, Registerer: prometheus.NewRegistry(), Logger: quiet(),
					Publisher: streams.NewPublisher(js, nil, streams.PublisherConfig{})},
				Model: scripted(t)})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- st.Run(ctx) }()
			publishTask(t, h, "killed", 1, "show reservation Q7RM2K", nil)
			<-js.reached
			if s, ok := storedState(t, h, "killed"); !ok || !s.TurnDone || s.LiveSteps {
				t.Fatalf("at the publish the stored state is %+v (stored %v), want the finished quick turn", s, ok)
			}
			cancel()
			close(js.release)
			if err := <-done; err != nil {
				t.Fatalf("killed worker: %v", err)
			}
			startWorker(t, h, cfg, agentworker.Deps{Model: scripted(t)})
			rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "killed")) == 1 })
			settled(t, h)
			singles, batches, _ := stepEvents(t, h, "killed")
			if len(singles) != 0 || len(batches) != 1 || len(batches[0].Steps) != 3 {
				t.Errorf("after the restart: singles %+v, batches %+v; want one batch of 3 steps", singles, batches)
			}
			if n := h.StreamMsgs(t, bus.StreamSteps); n != 1 {
				t.Errorf("REIN_STEPS holds %d messages, want 1", n)
			}
		})
	}
}
