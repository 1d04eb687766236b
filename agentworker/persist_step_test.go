package agentworker_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// lastUser is the text of the request's last user message.
func lastUser(req llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// With Persist "step" (the default) and the built-in domain, a tool result
// is written on its own only when its call changed the domain overlay; a
// result that changed nothing goes with the turn's end. Each turn here is
// one model answer with its calls, then a reply.
func TestStateIsWrittenAfterAResultOnlyWhenItsCallChangedSomething(t *testing.T) {
	get := call("c1", "get_reservation_details", `{"reservation_id":"Q7RM2K"}`)
	cancel := call("c2", "cancel_reservation", `{"reservation_id":"Q7RM2K"}`)
	failing := call("c3", "cancel_reservation", `{"reservation_id":"NOSUCH"}`)
	cases := []struct {
		name    string
		calls   []llm.ToolCall
		records int
	}{
		{"a read", []llm.ToolCall{get}, 1},
		{"think", []llm.ToolCall{call("c1", schemas.ToolThink, `{"thought":"check the fare"}`)}, 1},
		{"ambiguity report", []llm.ToolCall{call("c1", schemas.ToolAmbiguityReport, `{"report":"which flight?"}`)}, 1},
		{"transfer", []llm.ToolCall{call("c1", schemas.ToolTransfer, `{"summary":"wants a person"}`)}, 1},
		{"a refused write", []llm.ToolCall{failing}, 1},
		{"an unknown tool", []llm.ToolCall{call("c1", "launch_rocket", `{}`)}, 1},
		{"a write", []llm.ToolCall{cancel}, 2},
		{"a read, then a write", []llm.ToolCall{get, cancel}, 2},
		{"a write, then a read", []llm.ToolCall{cancel, get}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := rtest.StartJetStream(t, "")
			model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
				if req.Messages[len(req.Messages)-1].Role == llm.RoleUser {
					return llm.Response{ToolCalls: tc.calls}, nil
				}
				return llm.Response{Content: "Done."}, nil
			})
			startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: model})
			publishTask(t, h, "w", 1, "please help", nil)
			rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "w")) == 1 })
			settled(t, h)
			if n := len(stateRecords(t, h, "w")); n != tc.records {
				t.Errorf("state records after the turn = %d, want %d", n, tc.records)
			}
			st, ok := storedState(t, h, "w")
			if !ok || !st.TurnDone || st.Reply != "Done." || len(st.Messages) != 3+len(tc.calls) {
				t.Errorf("stored state = %+v", st)
			}
		})
	}
}

// An external backend still writes after every result, whatever the call.
func TestExternalBackendWritesAfterEveryResult(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	srv := &toolServer{applied: map[string]int{}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == llm.RoleUser {
			return llm.Response{ToolCalls: []llm.ToolCall{call("c1", "cancel_reservation", `{"reservation_id":"Q7RM2K"}`)}}, nil
		}
		return llm.Response{Content: "Done."}, nil
	})
	cfg := agentworker.Config{Backend: agentworker.BackendHTTP, HTTP: agentworker.HTTPConfig{URL: hs.URL, Tools: cancelTool}}
	startWorker(t, h, cfg, agentworker.Deps{Model: model})
	publishTask(t, h, "x", 1, "cancel Q7RM2K", nil)
	rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "x")) == 1 })
	settled(t, h)
	// The decision before the call, the result, the end of the turn.
	if n := len(stateRecords(t, h, "x")); n != 3 {
		t.Errorf("state records after the turn = %d, want 3", n)
	}
}

// A worker dies after a read-only result of turn 2, before the turn's
// end: nothing of turn 2 was written or published, so a fresh worker runs
// turn 2 again from the stored end of turn 1 (asking the model again) and
// answers it once, with one set of steps.
func TestCrashAfterAReadOnlyResultRerunsTheTurnFromTheLastWrite(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	get := llm.Response{ToolCalls: []llm.ToolCall{call("c1", "get_reservation_details", `{"reservation_id":"Q7RM2K"}`)}}
	workerA := startKillable(t, h, agentworker.Config{}, func(req llm.Request) (llm.Response, bool) {
		switch {
		case !lastIsTool(req, "get_reservation_details"):
			return get, true
		case lastUser(req) == "first":
			return llm.Response{Content: "First answer."}, true
		}
		return llm.Response{}, false
	})
	publishTask(t, h, "r", 1, "first", nil)
	rtest.CheckFor(t, wait, "turn 1 answered", func() bool { return len(agentTurns(t, h, "r")) == 1 })
	publishTask(t, h, "r", 2, "second", nil)
	workerA.killAtCrash(t)
	if s, ok := storedState(t, h, "r"); !ok || s.Turn != 1 || !s.TurnDone {
		t.Fatalf("stored state after the crash: turn %d done %v, want the end of turn 1", s.Turn, s.TurnDone)
	}
	if n := len(stateRecords(t, h, "r")); n != 1 {
		t.Fatalf("state records after the crash = %d, want 1 (turn 1's end)", n)
	}
	stepsBefore := len(steps(t, h, "r"))

	var bCalls atomic.Int32
	var firstB llm.Request
	modelB := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if bCalls.Add(1) == 1 {
			firstB = req
		}
		if lastIsTool(req, "get_reservation_details") {
			return llm.Response{Content: "Second answer."}, nil
		}
		return get, nil
	})
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: modelB})
	rtest.CheckFor(t, wait, "turn 2 answered", func() bool { return len(agentTurns(t, h, "r")) == 2 })
	settled(t, h)

	if n := bCalls.Load(); n != 2 || lastUser(firstB) != "second" || firstB.Messages[len(firstB.Messages)-1].Role != llm.RoleUser {
		t.Errorf("worker B asked the model %d times, first from %+v; want twice, from turn 2's user message", n, firstB.Messages[len(firstB.Messages)-1])
	}
	turns := agentTurns(t, h, "r")
	if turns[1].Turn != 2 || turns[1].Text != "Second answer." {
		t.Errorf("replies = %+v", turns)
	}
	var turn2 []schemas.Step
	for _, s := range steps(t, h, "r") {
		if s.Turn == 2 {
			turn2 = append(turn2, s)
		}
	}
	if stepsBefore != 3 || len(turn2) != 3 || turn2[0].Kind != schemas.StepToolCall || turn2[1].Kind != schemas.StepToolResult ||
		turn2[2].Kind != schemas.StepReply || turn2[2].Output != "Second answer." {
		t.Errorf("steps before the crash %d (want turn 1's 3); turn 2's steps = %+v", stepsBefore, turn2)
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("DLQ = %d", n)
	}
}

// A slow turn publishes its steps as it goes: a read-only result is
// written before its steps are published, so a worker that dies then
// leaves every published step in the stored State, and the turn resumes
// after the result instead of contradicting the published steps.
func TestLiveStepsAreWrittenBeforeTheyArePublished(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	cfg := agentworker.Config{LiveStepsAfter: -1}
	get := llm.Response{ToolCalls: []llm.ToolCall{call("c1", "get_reservation_details", `{"reservation_id":"Q7RM2K"}`)}}
	workerA := startKillable(t, h, cfg, func(req llm.Request) (llm.Response, bool) {
		return get, !lastIsTool(req, "get_reservation_details")
	})
	publishTask(t, h, "l", 1, "show Q7RM2K", nil)
	workerA.killAtCrash(t)
	published := steps(t, h, "l")
	s, ok := storedState(t, h, "l")
	if len(published) != 2 || !ok || s.TurnDone {
		t.Fatalf("after the crash: %d steps published, state stored %v (%+v)", len(published), ok, s)
	}
	stored := map[string]bool{} // kind/call id of every call and result in the stored state
	for _, m := range s.Messages[s.TurnStart:] {
		for _, c := range m.ToolCalls {
			stored[schemas.StepToolCall+"/"+c.ID] = true
		}
		if m.Role == llm.RoleTool {
			stored[schemas.StepToolResult+"/"+m.ToolCallID] = true
		}
	}
	for _, p := range published {
		if !stored[p.Kind+"/"+p.CallID] {
			t.Errorf("published step %d (%s %s) is not in the stored state %+v", p.Step, p.Kind, p.CallID, s.Messages)
		}
	}

	var bCalls atomic.Int32
	modelB := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		bCalls.Add(1)
		if lastIsTool(req, "get_reservation_details") {
			return llm.Response{Content: "Confirmed."}, nil
		}
		return llm.Response{ToolCalls: []llm.ToolCall{call("c9", "get_user_details", `{"user_id":"x"}`)}}, nil
	})
	startWorker(t, h, cfg, agentworker.Deps{Model: modelB})
	rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "l")) == 1 })
	settled(t, h)
	if n := bCalls.Load(); n != 1 {
		t.Errorf("worker B asked the model %d times, want once (resuming after the stored result)", n)
	}
	if ss := steps(t, h, "l"); len(ss) != 3 || ss[0].CallID != "c1" || ss[1].CallID != "c1" || ss[2].Kind != schemas.StepReply {
		t.Errorf("steps = %+v", ss)
	}
}
