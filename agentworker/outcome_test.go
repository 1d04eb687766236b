package agentworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

func unanswered(t *testing.T, h *rtest.JS, conv string) []schemas.Unanswered {
	t.Helper()
	var out []schemas.Unanswered
	for _, e := range readAll(t, h, streams.StreamOutcomes, streams.UnansweredSubject(tenant, conv)) {
		var u schemas.Unanswered
		if err := json.Unmarshal(e.data, &u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// The agent's model down: the turn is not left in the dead-letter stream
// alone — a human takes the conversation (escalation agent_unavailable,
// carrying the user's message), and its later turns take the human path.
func TestAgentModelDownHandsTheTurnToAHuman(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	var calls atomic.Int32
	down := funcModel(func(context.Context, llm.Request) (llm.Response, error) {
		calls.Add(1)
		return llm.Response{}, fmt.Errorf("connect: %w", llm.ErrServer)
	})
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: down})
	publishTask(t, h, "down", 1, "cancel reservation Q7RM2K", nil)
	rtest.CheckFor(t, wait, "the turn escalated", func() bool { return len(outcomes(t, h, "down")) == 1 })
	var esc schemas.Escalation
	if err := json.Unmarshal(outcomes(t, h, "down")[0].data, &esc); err != nil {
		t.Fatal(err)
	}
	if esc.Reason != schemas.ReasonAgentUnavailable || esc.Turn != 1 || !strings.Contains(esc.Summary, "cancel reservation Q7RM2K") {
		t.Fatalf("escalation %+v: want agent_unavailable for turn 1 carrying the user's message", esc)
	}
	if n := len(agentTurns(t, h, "down")); n != 0 {
		t.Errorf("%d agent replies from a model that is down", n)
	}
	if got := counter(t, reg, "rein_agentworker_turns_total", map[string]string{"outcome": agentworker.OutcomeUnavailable}); got != 1 {
		t.Errorf("agent_unavailable turns = %v, want 1", got)
	}
	// The dead letter stays for inspection and redrive.
	rtest.CheckFor(t, wait, "the failed task dead-lettered", func() bool { return h.StreamMsgs(t, streams.StreamDLQ) == 1 })
	before := calls.Load()
	publishTask(t, h, "down", 2, "hello?", nil)
	rtest.CheckFor(t, wait, "turn 2 on the human path", func() bool {
		return counter(t, reg, "rein_agentworker_turns_total", map[string]string{"outcome": agentworker.OutcomeHuman}) == 1
	})
	if calls.Load() != before {
		t.Errorf("a later turn of a conversation handed to a human reached the model")
	}
	if st, _ := storedState(t, h, "down"); st.Status != agentworker.StatusHuman {
		t.Errorf("status %q, want human", st.Status)
	}
}

// A turn the stage cannot run at all (here: the model panics, which the
// loop turns into a permanent failure) ends with an explicit failed record.
func TestAnUnrunnableTurnEndsUnansweredFailed(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	boom := funcModel(func(context.Context, llm.Request) (llm.Response, error) { panic("model client bug") })
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: prometheus.NewRegistry()}, Model: boom})
	publishTask(t, h, "boom", 1, "show reservation Q7RM2K", nil)
	// (Polled for the record itself: a consumer's pending count can lag
	// a publish by a moment, so "nothing pending" alone proves little.)
	rtest.CheckFor(t, wait, "the failed record", func() bool { return len(unanswered(t, h, "boom")) > 0 })
	got := unanswered(t, h, "boom")
	if len(got) != 1 || got[0].Reason != schemas.UnansweredFailed || got[0].Turn != 1 || !strings.Contains(got[0].Detail, "panic") {
		t.Fatalf("unanswered records %+v: want one failed record for turn 1", got)
	}
}

// An older task delivered after a later turn of its conversation ran is
// not acked silently: it ends with a superseded record naming the turn
// that overtook it; a finished turn delivered again gets none.
func TestAnOvertakenTurnIsRecordedAsSuperseded(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: scripted(t)})
	publishTask(t, h, "late", 2, "show reservation Q7RM2K", nil)
	rtest.CheckFor(t, wait, "turn 2 answered", func() bool { return len(agentTurns(t, h, "late")) == 1 })
	publishTask(t, h, "late", 1, "show reservation Q7RM2K", nil)
	rtest.CheckFor(t, wait, "turn 1's record", func() bool { return len(unanswered(t, h, "late")) > 0 })
	got := unanswered(t, h, "late")
	if len(got) != 1 || got[0].Reason != schemas.UnansweredSuperseded || got[0].Turn != 1 || got[0].SupersededBy != 2 {
		t.Fatalf("unanswered records %+v: want turn 1 superseded by 2", got)
	}
	if got := counter(t, reg, "rein_agentworker_turns_total", map[string]string{"outcome": agentworker.OutcomeSuperseded}); got != 1 {
		t.Errorf("superseded turns = %v, want 1", got)
	}
}
