package audit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// demoConversation is a known conversation across every stream, with
// fixed event times. It is published stream by stream (all turns first,
// then detections, …) so that stream order differs from time order, and a
// second conversation is interleaved to prove the filtering.
func demoConversation(t testing.TB) []streams.Out {
	const tn, cv = "acme", "demo1"
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	m := func(turn int) schemas.Meta { return schemas.Meta{Tenant: tn, Conversation: cv, Turn: turn} }
	det := func(turn, s int, d schemas.Detection) streams.Out {
		d.Turn, d.Module, d.TaxonomyVersion = turn, "rules", "rein-default-1"
		return ev(t, bus.StreamDetections, bus.DetectionSubject(tn, cv), schemas.TypeDetection,
			schemas.EventID("detection", tn, cv, turn), m(turn), at(s), d)
	}
	task := func(turn, s int, text string, inc *schemas.Inception) streams.Out {
		return ev(t, bus.StreamTasks, bus.TaskSubject(tn, cv), schemas.TypeTask,
			schemas.EventID("task", tn, cv, turn), m(turn), at(s), schemas.Task{Turn: turn, UserText: text, Inception: inc,
				DetectionID: schemas.EventID("detection", tn, cv, turn)})
	}
	step := func(turn, n, s int, st schemas.Step) streams.Out {
		st.Turn, st.Step = turn, n
		return ev(t, bus.StreamSteps, bus.StepSubject(tn, cv), schemas.TypeStep,
			schemas.StepEventID(tn, cv, turn, n), m(turn), at(s), st)
	}
	u1 := "Hi, I need to change my flight."
	u2 := "Can you also book me a hotel in Paris?"
	u3 := "I want to cancel or return my order."
	thought := "The user asks for a hotel, which I cannot book. I will say so and offer a transfer."
	return []streams.Out{
		turnOut(t, tn, cv, 1, schemas.RoleUser, u1, at(0)),
		turnOut(t, "acme", "other", 1, schemas.RoleUser, "Hello from another conversation", at(1)),
		turnOut(t, tn, cv, 1, schemas.RoleAgent, "Sure. Which reservation:\nABC123 or XYZ789?", at(5)),
		turnOut(t, tn, cv, 2, schemas.RoleUser, u2, at(10)),
		turnOut(t, tn, cv, 2, schemas.RoleAgent, "I cannot book hotels. Shall I transfer you to a human agent?", at(17)),
		turnOut(t, tn, cv, 3, schemas.RoleUser, u3, at(20)),

		det(1, 1, schemas.Detection{UserText: u1}),
		det(2, 11, schemas.Detection{UserText: u2, Rein: true, ErrorType: "unsupported_domain", Category: "unsupported",
			RecoveryTool: "transfer_to_human_agents", Evidence: "book me a hotel", Reasoning: thought}),
		det(3, 21, schemas.Detection{UserText: u3, Failed: true, FailReason: "inception deadline exceeded"}),

		task(1, 2, u1, nil),
		task(2, 12, u2, &schemas.Inception{Thought: thought, ErrorType: "unsupported_domain", RecoveryTool: "transfer_to_human_agents"}),

		step(1, 0, 3, schemas.Step{Kind: schemas.StepToolCall, Name: "get_reservations", CallID: "c1", Arguments: json.RawMessage(`{"user_id":"u1"}`)}),
		step(1, 1, 4, schemas.Step{Kind: schemas.StepToolResult, CallID: "c1", Output: `["ABC123","XYZ789"]`}),
		step(2, 0, 13, schemas.Step{Kind: schemas.StepThink, Name: "think", Arguments: json.RawMessage(`{"thought":"` + thought + `"}`), Injected: true}),
		step(2, 1, 14, schemas.Step{Kind: schemas.StepReply, Output: "I cannot book hotels."}),
		step(2, 2, 15, schemas.Step{Kind: schemas.StepToolCall, Name: "transfer_to_human_agents", CallID: "c2", Arguments: json.RawMessage(`{"summary":"hotel"}`)}),

		ev(t, bus.StreamOutcomes, bus.EscalationSubject(tn, cv), schemas.TypeEscalation,
			schemas.EventID("escalation", tn, cv, 2), m(2), at(16), schemas.Escalation{Turn: 2, Summary: "user wants a hotel",
				ErrorType: "unsupported_domain", Reason: schemas.ReasonTransfer, DetectionID: schemas.EventID("detection", tn, cv, 2)}),
		ev(t, bus.StreamOutcomes, bus.ReportSubject("acme", "other"), schemas.TypeReport,
			schemas.EventID("report", "acme", "other", 1), schemas.Meta{Tenant: "acme", Conversation: "other", Turn: 1}, at(2),
			schemas.Report{Turn: 1, Report: "not ours"}),
		ev(t, bus.StreamDLQ, bus.DLQSubject(bus.StageAgentWorker), schemas.TypeDeadLetter,
			"dlq-agentworker-REIN_TASKS-9", m(3), at(22), schemas.DeadLetter{Stage: bus.StageAgentWorker,
				Reason: "model returned no reply", Subject: bus.TaskSubject(tn, cv), Stream: bus.StreamTasks, Sequence: 9, Data: []byte("{}")}),
		ev(t, bus.StreamDLQ, bus.DLQSubject(bus.StageDetector), schemas.TypeDeadLetter,
			"dlq-detector-REIN_TURNS-2", schemas.Meta{Tenant: "acme", Conversation: "other"}, at(3), schemas.DeadLetter{Stage: bus.StageDetector,
				Reason: "x", Subject: bus.TurnSubject("acme", "other", "user"), Data: []byte("{}")}),
	}
}
