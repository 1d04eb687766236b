package agentworker_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// pulling waits until the agent worker's consumer is pulling (it
// subscribes to user turns for speculation before it starts to pull).
func pulling(t *testing.T, h *rtest.JS) {
	t.Helper()
	rtest.CheckFor(t, wait, "the agent worker pulling", func() bool {
		c, err := h.JS.Consumer(context.Background(), bus.StreamTasks, bus.DurableAgentWorker)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.NumWaiting > 0
	})
}

func publishUserTurn(t *testing.T, h *rtest.JS, conv string, turn int, text string) {
	t.Helper()
	meta := schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.TurnMsgID(tenant, conv, turn, schemas.RoleUser), "", meta,
		schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: turn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamTurns, bus.TurnSubject(tenant, conv, schemas.RoleUser), &ev); err != nil {
		t.Fatal(err)
	}
}

// With speculation, a clean turn's first model call starts when the user
// turn is stored; the turn uses that answer, and its reply equals the one
// a run without speculation gives, with no extra model call.
func TestSpeculationCleanTurnReplyEqualsTheNonSpeculativeOne(t *testing.T) {
	replies := map[bool]string{}
	for _, speculate := range []bool{false, true} {
		h := rtest.StartJetStream(t, "")
		reg := prometheus.NewRegistry()
		model := scripted(t)
		startWorker(t, h, agentworker.Config{Speculate: speculate}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: model})
		pulling(t, h)
		publishUserTurn(t, h, "spec", 1, "show reservation Q7RM2K")
		if speculate {
			rtest.CheckFor(t, wait, "the speculative call started", func() bool { return len(model.requests()) == 1 })
		}
		publishTask(t, h, "spec", 1, "show reservation Q7RM2K", nil)
		rtest.CheckFor(t, wait, "the turn answered", func() bool { return len(agentTurns(t, h, "spec")) == 1 })
		replies[speculate] = agentTurns(t, h, "spec")[0].Text
		if n := len(model.requests()); n != 2 {
			t.Errorf("speculate=%v: %d model calls, want 2", speculate, n)
		}
		if speculate {
			if hits := counter(t, reg, "rein_agentworker_speculations_total", map[string]string{"result": "hit"}); hits != 1 {
				t.Errorf("speculation hits = %v, want 1", hits)
			}
		}
	}
	if replies[true] != replies[false] || replies[true] == "" {
		t.Fatalf("reply with speculation %q, without %q", replies[true], replies[false])
	}
}

// A turn that turns out to need recovery: the speculative answer (a
// tool call) is thrown away, never run; the turn starts from the planted
// thought.
func TestSpeculationRunsNoToolBeforeTheDecision(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	model := scripted(t)
	startWorker(t, h, agentworker.Config{Speculate: true}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: model})
	pulling(t, h)
	publishUserTurn(t, h, "act", 1, "cancel reservation Q7RM2K, or that one")
	rtest.CheckFor(t, wait, "the speculative call answered", func() bool { return len(model.requests()) == 1 })
	inc := &schemas.Inception{Thought: "The user's request is ambiguous: call ambiguity_report, then ask which one.",
		ErrorType: "anaphora", RecoveryTool: schemas.ToolAmbiguityReport}
	publishTask(t, h, "act", 1, "cancel reservation Q7RM2K, or that one", inc)
	rtest.CheckFor(t, wait, "the turn answered", func() bool { return len(agentTurns(t, h, "act")) == 1 })
	st := steps(t, h, "act")
	if len(st) == 0 || st[0].Kind != schemas.StepThink || !st[0].Injected {
		t.Fatalf("steps %+v: want the planted think step first", st)
	}
	for _, s := range st {
		if s.Name == "get_reservation_details" {
			t.Fatalf("the speculative tool call ran: %+v", st)
		}
	}
	if w := counter(t, reg, "rein_agentworker_speculations_total", map[string]string{"result": "wasted"}); w != 1 {
		t.Errorf("wasted speculations = %v, want 1", w)
	}
}
