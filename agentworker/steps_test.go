package agentworker

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// callStep numbers every call of a turn as turnOutputs' tool_call and
// think steps do, with or without a planted think, before and after
// results, several calls to a model answer.
func TestCallStepNumbersAsTurnOutputs(t *testing.T) {
	meta := schemas.Meta{Tenant: "acme", Conversation: "c"}
	args := json.RawMessage(`{}`)
	s := &State{}
	s.begin(1, schemas.Task{UserText: "earlier"})
	s.Messages = append(s.Messages, llm.Message{Role: llm.RoleAssistant, Content: "hi"})
	s.TurnDone = true
	s.begin(2, schemas.Task{UserText: "now", Inception: &schemas.Inception{Thought: "check", ErrorType: "e", RecoveryTool: schemas.ToolThink}})
	s.Messages = append(s.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "get_user_details", Arguments: args}, {ID: "b", Name: schemas.ToolThink, Arguments: args}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "a", Name: "get_user_details", Content: "{}"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "b", Name: schemas.ToolThink},
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: schemas.ToolAmbiguityReport, Arguments: args}, {ID: "d", Name: "cancel_reservation", Arguments: args}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c", Name: schemas.ToolAmbiguityReport, Content: ReportAck},
	)
	want := map[string]int{}
	for _, o := range turnOutputs(meta, s, 30, false) {
		if st, ok := o.data.(schemas.Step); ok && (st.Kind == schemas.StepToolCall || st.Kind == schemas.StepThink) {
			want[st.CallID] = st.Step
		}
	}
	if len(want) != 5 {
		t.Fatalf("turnOutputs numbered %d calls, want 5: %v", len(want), want)
	}
	for id, n := range want {
		if got := callStep(s, id); got != n {
			t.Errorf("callStep(%s) = %d, turnOutputs numbers it %d", id, got, n)
		}
	}
	if got := callStep(s, "nosuch"); got != 0 {
		t.Errorf("callStep of an unknown call = %d, want 0", got)
	}
}

// benchTurn is the bench's turn, finished: a lookup, its result, a reply.
func benchTurn() *State {
	s := &State{}
	s.begin(3, schemas.Task{UserText: "show reservation Q7RM2K"})
	s.Messages = append(s.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_reservation_details", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Name: "get_reservation_details", Content: `{"reservation_id": "Q7RM2K", "user_id": "nora_quist_4821", "origin": "BOS", "destination": "ORD"}`},
		llm.Message{Role: llm.RoleAssistant, Content: "Your reservation Q7RM2K is confirmed."})
	s.TurnDone, s.Outcome, s.Reply = true, OutcomeReply, "Your reservation Q7RM2K is confirmed."
	return s
}

// What a turn's publish derives: its outputs once.
func BenchmarkTurnOutputs(b *testing.B) {
	meta, s := schemas.Meta{Tenant: "acme", Conversation: "c"}, benchTurn()
	b.ReportAllocs()
	for b.Loop() {
		_ = turnOutputs(meta, s, 30, false)
	}
}

// What runCalls derives per call: its step number.
func BenchmarkCallStep(b *testing.B) {
	s := benchTurn()
	b.ReportAllocs()
	for b.Loop() {
		_ = callStep(s, "c1")
	}
}

// What a quick turn's publish builds, in each StepEvents mode: its
// outputs and an event for each (encoding and storing aside).
func BenchmarkQuickTurnEvents(b *testing.B) {
	meta := schemas.Meta{Tenant: "acme", Conversation: "c", Turn: 3}
	for _, mode := range []string{StepEventsStep, StepEventsTurn} {
		b.Run(mode, func(b *testing.B) {
			st := &Stage{cfg: Config{MaxSteps: 30, StepEvents: mode}}
			s := benchTurn()
			b.ReportAllocs()
			for b.Loop() {
				for _, o := range st.events(meta, s) {
					if _, err := schemas.BuildEvent(o.typ, o.id, "", meta, o.data); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// A batched turn's outputs are its singles' outputs with the steps made
// one dev.rein.steps.v1 at the first one's place, everything else (the
// report, the escalations, the reply turn) as it was and in order.
func TestBatchedOutputsAreTheSinglesInOneEvent(t *testing.T) {
	meta := schemas.Meta{Tenant: "acme", Conversation: "c"}
	args := json.RawMessage(`{"summary":"s","report":"r"}`)
	report := benchTurn()
	report.Messages = append(report.Messages[:len(report.Messages)-1],
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "r1", Name: schemas.ToolAmbiguityReport, Arguments: args}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "r1", Name: schemas.ToolAmbiguityReport, Content: ReportAck},
		llm.Message{Role: llm.RoleAssistant, Content: "Which one?"})
	maxed := benchTurn()
	maxed.Outcome = OutcomeMaxSteps
	transfer := benchTurn()
	transfer.Messages = append(transfer.Messages[:len(transfer.Messages)-1],
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: schemas.ToolTransfer, Arguments: args}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "t1", Name: schemas.ToolTransfer, Content: "Transfer successful"})
	failed := benchTurn()
	failed.Outcome = OutcomeFailed
	human := benchTurn()
	human.Outcome = OutcomeHuman
	for name, s := range map[string]*State{"reply": benchTurn(), "report": report, "max_steps": maxed, "transfer": transfer, "failed": failed, "human": human} {
		singles := turnOutputs(meta, s, 30, false)
		var want []output
		var steps []schemas.Step
		at := -1
		for _, o := range singles {
			if st, ok := o.data.(schemas.Step); ok {
				if at < 0 {
					at = len(want)
					want = append(want, output{})
				}
				steps = append(steps, st)
				continue
			}
			want = append(want, o)
		}
		if at >= 0 {
			want[at] = output{bus.StreamSteps, bus.StepSubject("acme", "c"), schemas.TypeSteps,
				schemas.StepsEventID("acme", "c", s.Turn), schemas.Steps{Turn: s.Turn, Steps: steps}}
		}
		if got := turnOutputs(meta, s, 30, true); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: batched outputs\n%+v\nwant\n%+v", name, got, want)
		}
	}
}
