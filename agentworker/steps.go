package agentworker

import (
	"fmt"
	"strconv"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// output is one event the turn produces, before encoding.
type output struct {
	stream, subject, typ, id string
	data                     any
}

// turnOutputs derives, from the state alone, every event of the current
// turn in a fixed order: its steps (with their numbers), the report or
// escalation each recovery tool result yields, the max_steps escalation,
// and, once the turn is done, the reply step and the agent turn. The list
// only grows while the turn runs, and the ids are deterministic, so
// publishing it again after a crash duplicates nothing. Steps are
// numbered as callStep numbers them. With batch, the steps are one
// dev.rein.steps.v1 holding them in order, where the first one was: built
// so directly, with no subject, id or boxed value per step.
func turnOutputs(m schemas.Meta, s *State, maxSteps int, batch bool) (outs []output) {
	t, c, turn := m.Tenant, m.Conversation, s.Turn
	if s.Outcome == OutcomeHuman {
		// A human-path turn: the agent produced nothing; the record says
		// whose turn it is.
		return []output{{bus.StreamOutcomes, bus.UnansweredSubject(t, c), schemas.TypeUnanswered,
			schemas.EventID("unanswered", t, c, turn),
			schemas.Unanswered{Turn: turn, Reason: schemas.UnansweredHumanPath, EscalatedTurn: s.EscalatedTurn, HandoffReason: s.HandoffReason}}}
	}
	turnMsgs := s.turnMessages()
	outs = make([]output, 0, len(turnMsgs)+2) // a step per message or call, mostly; the reply's two
	n := 0
	first := -1 // with batch, where the steps' one output is
	var steps []schemas.Step
	if batch {
		defer func() {
			if first >= 0 {
				outs[first] = output{bus.StreamSteps, bus.StepSubject(t, c), schemas.TypeSteps,
					schemas.StepsEventID(t, c, turn), schemas.Steps{Turn: turn, Steps: steps}}
			}
		}()
	}
	step := func(st schemas.Step) {
		n++
		st.Turn, st.Step = turn, n
		if batch {
			if first < 0 {
				first, steps = len(outs), make([]schemas.Step, 0, len(turnMsgs)+1)
				outs = append(outs, output{})
			}
			steps = append(steps, st)
			return
		}
		outs = append(outs, output{bus.StreamSteps, bus.StepSubject(t, c), schemas.TypeStep, schemas.StepEventID(t, c, turn, n), st})
	}
	var errorType, thought string
	if s.Inception != nil {
		errorType, thought = s.Inception.ErrorType, s.Inception.Thought
	}
	for i, msg := range turnMsgs {
		switch msg.Role {
		case llm.RoleAssistant:
			for _, call := range msg.ToolCalls {
				if call.Name == schemas.ToolThink {
					step(schemas.Step{Kind: schemas.StepThink, Name: call.Name, CallID: call.ID, Arguments: call.Arguments,
						Injected: i == 0 && s.Inception != nil && call.ID == plantedID(turn)})
				} else {
					step(schemas.Step{Kind: schemas.StepToolCall, Name: call.Name, CallID: call.ID, Arguments: call.Arguments})
				}
			}
		case llm.RoleTool:
			if msg.Name == schemas.ToolThink {
				continue // part of its think step
			}
			call := callOf(turnMsgs[:i], msg.ToolCallID)
			step(schemas.Step{Kind: schemas.StepToolResult, Name: msg.Name, CallID: msg.ToolCallID, Output: msg.Content})
			switch msg.Name {
			case schemas.ToolAmbiguityReport:
				outs = append(outs, output{bus.StreamOutcomes, bus.ReportSubject(t, c), schemas.TypeReport,
					schemas.EventID("report", t, c, turn) + "-" + strconv.Itoa(n),
					schemas.Report{Turn: turn, Report: stringArg(call.Arguments, "report"), ErrorType: errorType, DetectionID: s.DetectionID}})
			case schemas.ToolTransfer:
				outs = append(outs, output{bus.StreamOutcomes, bus.EscalationSubject(t, c), schemas.TypeEscalation,
					schemas.EventID("escalation", t, c, turn),
					schemas.Escalation{Turn: turn, Summary: stringArg(call.Arguments, "summary"), ErrorType: errorType,
						Reason: schemas.ReasonTransfer, DetectionID: s.DetectionID, Thought: thought}})
			}
		}
	}
	if !s.TurnDone {
		return outs
	}
	switch s.Outcome {
	case OutcomeUnavailable:
		outs = append(outs, output{bus.StreamOutcomes, bus.EscalationSubject(t, c), schemas.TypeEscalation,
			schemas.EventID("escalation", t, c, turn),
			schemas.Escalation{Turn: turn, Reason: schemas.ReasonAgentUnavailable, ErrorType: errorType, DetectionID: s.DetectionID, Thought: thought,
				Summary: "The agent could not answer the user's message (" + clip(s.Reply, 300) + "): " + clip(s.UserText, 2000)}})
		return outs
	case OutcomeFailed:
		outs = append(outs, output{bus.StreamOutcomes, bus.UnansweredSubject(t, c), schemas.TypeUnanswered,
			schemas.EventID("unanswered", t, c, turn),
			schemas.Unanswered{Turn: turn, Reason: schemas.UnansweredFailed, Detail: s.Reply}})
		return outs
	}
	if s.Outcome == OutcomeMaxSteps {
		outs = append(outs, output{bus.StreamOutcomes, bus.EscalationSubject(t, c), schemas.TypeEscalation,
			schemas.EventID("escalation", t, c, turn),
			schemas.Escalation{Turn: turn, Reason: schemas.ReasonMaxSteps, ErrorType: errorType, DetectionID: s.DetectionID, Thought: thought,
				Summary: fmt.Sprintf("The agent made %d model calls without answering the user's message: %s", maxSteps, clip(s.UserText, 2000))}})
	}
	step(schemas.Step{Kind: schemas.StepReply, Output: s.Reply})
	outs = append(outs, output{bus.StreamTurns, bus.TurnSubject(t, c, schemas.RoleAgent), schemas.TypeTurn,
		schemas.EventID("turn", t, c, turn) + "-" + schemas.RoleAgent,
		schemas.Turn{Role: schemas.RoleAgent, Text: s.Reply, Turn: turn}})
	return outs
}

// events is turnOutputs as this stage publishes them: with StepEvents
// "turn", the steps of a turn that finished before any went live are one
// dev.rein.steps.v1, where its first step was. Only the State decides, so
// a resumed worker publishes the same batch (same id) or the same singles.
func (s *Stage) events(m schemas.Meta, st *State) []output {
	return turnOutputs(m, st, s.cfg.MaxSteps, s.cfg.StepEvents == StepEventsTurn && st.TurnDone && !st.LiveSteps)
}

// goLive marks, with StepEvents "turn", that the turn's steps go out one
// by one from now on. The mark is written before the first of them is
// published (publish writes an unsaved State first), so a worker that
// resumes the turn never sends them again as a batch.
func (s *Stage) goLive(st *State) {
	if s.cfg.StepEvents == StepEventsTurn && !st.LiveSteps {
		st.LiveSteps, st.unsaved = true, true
	}
}

// turnMessages is the current turn's part of the context after its user
// message.
func (s *State) turnMessages() []llm.Message {
	return s.Messages[min(s.TurnStart+1, len(s.Messages)):]
}

// callStep is the step number turnOutputs gives the call id of the
// current turn (the HTTP idempotency key's step), 0 when there is none:
// a step per call, and one per result except think's (part of its step).
// It counts without building the outputs: runCalls asks it for every call.
func callStep(s *State, id string) int {
	n := 0
	for _, msg := range s.turnMessages() {
		switch msg.Role {
		case llm.RoleAssistant:
			for _, call := range msg.ToolCalls {
				n++
				if call.ID == id {
					return n
				}
			}
		case llm.RoleTool:
			if msg.Name != schemas.ToolThink {
				n++
			}
		}
	}
	return 0
}

// callOf finds the call a result answers.
func callOf(msgs []llm.Message, id string) llm.ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id {
				return c
			}
		}
	}
	return llm.ToolCall{}
}
