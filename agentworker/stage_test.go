package agentworker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

func inception(errorType, tool string) *schemas.Inception {
	return &schemas.Inception{ErrorType: errorType, RecoveryTool: tool,
		Thought: "The request shows " + errorType + "; my plan: call " + tool + " before anything else."}
}

// TestRecoveryPaths plays one conversation per error type, and clean ones,
// through the stage with the scripted agent.
func TestRecoveryPaths(t *testing.T) {
	cases := []struct {
		conv      string
		text      string
		inc       *schemas.Inception
		tools     []string // non-think tool calls, in order
		outcome   string   // event type on REIN_OUTCOMES, "" for none
		reply     string   // prefix of the agent's reply
		escalated bool
	}{
		{"anaphora", "cancel that one", inception("anaphora", "ambiguity_report"), []string{"ambiguity_report"}, schemas.TypeReport, "Which reservation", false},
		{"multi", "change the flight to the later one", inception("multiple_interpretation", "ambiguity_report"), []string{"ambiguity_report"}, schemas.TypeReport, "Which reservation", false},
		{"contra", "cancel it but keep it", inception("contradiction", "ambiguity_report"), []string{"ambiguity_report"}, schemas.TypeReport, "Which reservation", false},
		{"action", "I want seat selection", inception("unsupported_action", "transfer_to_human_agents"), []string{"transfer_to_human_agents"}, schemas.TypeEscalation, "A human colleague", true},
		{"param", "book first class", inception("unsupported_parameter", "transfer_to_human_agents"), []string{"transfer_to_human_agents"}, schemas.TypeEscalation, "A human colleague", true},
		{"domain", "book me a hotel", inception("unsupported_domain", "transfer_to_human_agents"), []string{"transfer_to_human_agents"}, schemas.TypeEscalation, "A human colleague", true},
		{"clean", "hello there", nil, nil, "", "How can I help", false},
		{"lookup", "show reservation Q7RM2K", nil, []string{"get_reservation_details"}, "", "Found it: {", false},
	}
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	model := scripted(t)
	st, _ := startWorker(t, h, agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: model})
	for _, tc := range cases {
		publishTask(t, h, tc.conv, 1, tc.text, tc.inc)
	}
	rtest.CheckFor(t, wait, "a reply in every conversation", func() bool {
		for _, tc := range cases {
			if len(agentTurns(t, h, tc.conv)) != 1 {
				return false
			}
		}
		return true
	})
	settled(t, h)
	tools := map[string]bool{}
	for _, tool := range st.Tools() {
		tools[tool.Name] = true
	}
	for _, name := range []string{"think", "ambiguity_report", "transfer_to_human_agents", "get_reservation_details", "cancel_reservation"} {
		if !tools[name] {
			t.Errorf("tool %s not offered to the model", name)
		}
	}
	for _, tc := range cases {
		t.Run(tc.conv, func(t *testing.T) {
			if r := agentTurns(t, h, tc.conv)[0]; !strings.HasPrefix(r.Text, tc.reply) || r.Turn != 1 {
				t.Errorf("reply = %+v, want prefix %q", r, tc.reply)
			}
			ss := steps(t, h, tc.conv)
			var injected, thinks int
			var called []string
			for i, s := range ss {
				if s.Step != i+1 || s.Turn != 1 {
					t.Errorf("step %d numbered %d (turn %d)", i+1, s.Step, s.Turn)
				}
				if s.Injected {
					injected++
				}
				switch s.Kind {
				case schemas.StepThink:
					thinks++
				case schemas.StepToolCall:
					called = append(called, s.Name)
				}
			}
			if tc.inc != nil {
				first := ss[0]
				var args struct{ Thought string }
				_ = json.Unmarshal(first.Arguments, &args)
				if injected != 1 || thinks != 1 || first.Kind != schemas.StepThink || !first.Injected || args.Thought != tc.inc.Thought {
					t.Errorf("planted think: injected=%d thinks=%d first=%+v", injected, thinks, first)
				}
			} else if injected != 0 || thinks != 0 {
				t.Errorf("clean turn got a think step: %+v", ss)
			}
			if strings.Join(called, ",") != strings.Join(tc.tools, ",") {
				t.Errorf("tool calls = %v, want %v", called, tc.tools)
			}
			if last := ss[len(ss)-1]; last.Kind != schemas.StepReply {
				t.Errorf("last step = %+v, want the reply", last)
			}
			outs := outcomes(t, h, tc.conv)
			if tc.outcome == "" {
				if len(outs) != 0 {
					t.Errorf("unexpected outcomes %+v", outs)
				}
				return
			}
			if len(outs) != 1 || outs[0].typ != tc.outcome {
				t.Fatalf("outcomes = %+v, want one %s", outs, tc.outcome)
			}
			switch tc.outcome {
			case schemas.TypeReport:
				var r schemas.Report
				_ = json.Unmarshal(outs[0].data, &r)
				if r.ErrorType != tc.inc.ErrorType || !strings.Contains(r.Report, tc.text) || r.DetectionID == "" {
					t.Errorf("report = %+v", r)
				}
			case schemas.TypeEscalation:
				var e schemas.Escalation
				_ = json.Unmarshal(outs[0].data, &e)
				if e.Reason != schemas.ReasonTransfer || e.ErrorType != tc.inc.ErrorType || e.Thought != tc.inc.Thought || !strings.Contains(e.Summary, tc.text) {
					t.Errorf("escalation = %+v", e)
				}
			}
			s, ok := storedState(t, h, tc.conv)
			if !ok || !s.TurnDone || (s.Status == agentworker.StatusHuman) != tc.escalated {
				t.Errorf("stored state: status %q done %v", s.Status, s.TurnDone)
			}
		})
	}

	// The planted step sits after the user message and before the first
	// sampling; the system prompt is passed unchanged.
	for _, req := range model.requests() {
		if req.System != prompt || req.Purpose != llm.PurposeAgent {
			t.Fatalf("request system/purpose changed: %q %q", req.System, req.Purpose)
		}
		if len(req.Messages) == 3 && req.Messages[0].Content == "cancel that one" {
			if m := req.Messages[1]; m.Role != llm.RoleAssistant || len(m.ToolCalls) != 1 || m.ToolCalls[0].Name != "think" {
				t.Errorf("message after the user's = %+v", m)
			}
			if m := req.Messages[2]; m.Role != llm.RoleTool || m.Content != "" || m.Name != "think" {
				t.Errorf("planted result = %+v", m)
			}
		}
	}
	if got := counter(t, reg, "rein_agentworker_turns_total", map[string]string{"outcome": "escalated"}); got != 3 {
		t.Errorf("escalated turns = %v", got)
	}
	if got := counter(t, reg, "rein_agentworker_tool_calls_total", map[string]string{"tool": "ambiguity_report", "outcome": "ok"}); got != 3 {
		t.Errorf("ambiguity_report calls = %v", got)
	}
	if got := counter(t, reg, "rein_agentworker_turn_seconds", nil); got != float64(len(cases)) {
		t.Errorf("turn durations observed = %v", got)
	}
	if n := h.StreamMsgs(t, streams.StreamDLQ); n != 0 {
		t.Errorf("DLQ = %d", n)
	}
}

// TestHumanPathAfterTransfer: once transferred, later user turns of the
// conversation never reach the model; earlier turns' context is kept.
func TestHumanPathAfterTransfer(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	model := scripted(t)
	reg := prometheus.NewRegistry()
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: model})
	publishTask(t, h, "t1", 1, "show reservation Q7RM2K", nil)
	rtest.CheckFor(t, wait, "turn 1 reply", func() bool { return len(agentTurns(t, h, "t1")) == 1 })
	publishTask(t, h, "t1", 2, "I want seat selection", inception("unsupported_action", "transfer_to_human_agents"))
	rtest.CheckFor(t, wait, "turn 2 reply", func() bool { return len(agentTurns(t, h, "t1")) == 2 })
	calls := len(model.requests())
	// Turn 2's first request carries turn 1's tool call and result.
	var turn2 llm.Request
	for _, r := range model.requests() {
		if r.Messages[len(r.Messages)-1].Role == llm.RoleTool && r.Messages[len(r.Messages)-1].Name == "think" {
			turn2 = r
		}
	}
	if len(turn2.Messages) < 6 || turn2.Messages[1].ToolCalls[0].Name != "get_reservation_details" {
		t.Errorf("turn 2 context = %+v", turn2.Messages)
	}

	publishTask(t, h, "t1", 3, "hello? are you there?", nil)
	publishTask(t, h, "t1", 4, "please answer", nil)
	rtest.CheckFor(t, wait, "turns 3 and 4 recorded on the human path", func() bool {
		s, ok := storedState(t, h, "t1")
		return ok && s.Turn == 4 && s.HumanTurns == 2
	})
	if n := len(model.requests()); n != calls {
		t.Errorf("the model was called %d more times after the transfer", n-calls)
	}
	if n := len(agentTurns(t, h, "t1")); n != 2 {
		t.Errorf("agent turns = %d, want 2", n)
	}
	if s, _ := storedState(t, h, "t1"); s.Status != agentworker.StatusHuman || s.EscalatedTurn != 2 {
		t.Errorf("state status %q escalated at %d", s.Status, s.EscalatedTurn)
	}
	if got := counter(t, reg, "rein_agentworker_turns_total", map[string]string{"outcome": "human_path"}); got != 2 {
		t.Errorf("human_path turns = %v", got)
	}
}

// A task without a turn number (a foreign publisher's: rein numbers every
// task from its user turn) is dead-lettered with the reason; it would
// otherwise be taken for a turn in progress of a state that has none.
func TestATaskWithoutATurnNumberIsDeadLettered(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	model := scripted(t)
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: prometheus.NewRegistry()}, Model: model})
	publishTask(t, h, "unnumbered", 0, "show reservation Q7RM2K", nil)
	publishTask(t, h, "unnumbered", 1, "show reservation Q7RM2K", nil)
	settled(t, h)
	if n := len(agentTurns(t, h, "unnumbered")); n != 1 {
		t.Errorf("agent turns = %d, want 1 (turn 1's)", n)
	}
	dls := readAll(t, h, streams.StreamDLQ)
	if len(dls) != 1 || !strings.Contains(string(dls[0].data), "turn number") {
		t.Errorf("dead letters %+v, want one naming the missing turn number", dls)
	}
}
