package agentworker

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// handle runs one user turn. A redelivered task resumes where the stored
// state stopped; a finished turn only republishes its (deduplicated)
// outputs; a conversation that belongs to a human does not reach the model.
func (s *Stage) handle(ctx context.Context, d streams.Decoded) error {
	if d.Event.Type() != schemas.TypeTask {
		return streams.Permanent(fmt.Errorf("agentworker: unexpected event type %q on %s", d.Event.Type(), d.Subject))
	}
	if s.deps.TaskKey != nil {
		if err := s.deps.TaskKey.Verify(d.Event); err != nil {
			s.m.unverified.Inc()
			return streams.Permanent(err)
		}
	}
	var task schemas.Task
	if err := d.Payload(&task); err != nil {
		return streams.Permanent(err)
	}
	turn := cmp.Or(task.Turn, d.Meta.Turn)
	if turn < 1 {
		// Turn numbers name the turn's state, steps and reply; rein numbers
		// every task from its user turn.
		return streams.Permanent(fmt.Errorf("agentworker: a task without a turn number (data.turn or the turn extension, from 1)"))
	}
	meta := schemas.Meta{Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation, Turn: turn, Traceparent: d.Meta.Traceparent}
	st, err := s.load(ctx, meta)
	if err != nil {
		return err
	}
	switch {
	case st.Turn > turn && st.finished(turn):
		return nil // an older turn delivered again (a lost ack): it has its outcome
	case st.Turn > turn:
		// A later turn ran first: only when the order gate gave up waiting
		// for this one (MaxHold). The user has moved on; the turn ends with
		// an explicit superseded record, never a silent ack.
		return s.supersede(ctx, meta, st, turn)
	case st.Turn == turn && st.TurnDone:
		return s.republish(ctx, meta, st) // redelivered after it finished
	case st.Turn == turn:
		// resume the turn in progress
	case st.Status == StatusHuman:
		// The conversation belongs to the human path: the turn gets its
		// human_path record and never reaches the model, unless the
		// conversation was given back to the agent (release.go).
		back, err := s.takeBack(ctx, meta, st)
		if err != nil {
			return err
		}
		if !back {
			return s.humanPath(ctx, meta, st, task)
		}
		s.begin(meta, st, task)
	default:
		// A turn the state does not know of. When the task is old, the
		// state may have expired after the turn was answered, or after the
		// conversation was handed to a human: do not run it.
		if d.OlderThan(s.recheck) {
			settled, err := s.settled(ctx, meta)
			if err != nil {
				return err // retried
			}
			if settled {
				return nil
			}
		}
		s.begin(meta, st, task)
	}
	start := time.Now()
	if err := s.run(ctx, meta, st); err != nil {
		return err
	}
	if s.spec != nil {
		s.spec.finished(streams.ConversationKey(meta.Tenant, meta.Conversation), st)
	}
	s.m.turns.WithLabelValues(st.Outcome).Inc()
	s.m.turnSecs.Observe(time.Since(start).Seconds())
	return nil
}

// begin starts the turn the agent is to answer, with the speculative
// first answer when there is one.
func (s *Stage) begin(meta schemas.Meta, st *State, task schemas.Task) {
	st.begin(meta.Turn, task)
	if s.spec != nil {
		st.spec = s.spec.take(streams.ConversationKey(meta.Tenant, meta.Conversation), st, task)
	}
}

// republish handles a finished turn delivered again. When every output of
// the turn is found stored, nothing is published again; otherwise all are,
// their ids dropping the ones stored within the duplicate window. The check
// costs a direct get per subject the turn publishes to (two to four), and
// only when this worker has not published the turn itself (a restart, a
// reload, a failed publish): a worker that did returns at once.
func (s *Stage) republish(ctx context.Context, meta schemas.Meta, st *State) error {
	if outs, _ := turnOutputs(meta, st, s.cfg.MaxSteps); st.published < len(outs) {
		stored, err := s.allStored(ctx, outs, st.Turn)
		if err != nil {
			return err
		}
		if stored {
			st.published = len(outs)
			return nil
		}
	}
	return s.publish(ctx, meta, st)
}

// allStored tells whether every output of a turn is stored. The outputs on
// one subject are published in order on one connection, and a stream
// stores a connection's messages in the order sent, so they are all stored
// when the subject's last stored event is the turn's last output there, or
// of a later turn.
func (s *Stage) allStored(ctx context.Context, outs []output, turn int) (bool, error) {
	last := map[string]output{} // subject → the turn's last output on it
	for _, o := range outs {
		last[o.subject] = o
	}
	for subject, o := range last {
		d, found, err := streams.LastEvent(ctx, s.outputs[o.stream], subject)
		if err != nil {
			return false, fmt.Errorf("agentworker: %w", err)
		}
		if !found || (d.Meta.Turn <= turn && d.Event.ID() != o.id) {
			return false, nil
		}
	}
	return true, nil
}

// settled tells whether an old turn the state does not know of must not
// run: it is answered, or the conversation was handed to a human (its
// escalation is stored), whose turns never reach the model.
func (s *Stage) settled(ctx context.Context, meta schemas.Meta) (bool, error) {
	if answered, err := s.replyStored(ctx, meta); err != nil || answered {
		return answered, err
	}
	_, escalated, err := streams.LastTurn(ctx, s.outputs[streams.StreamOutcomes], streams.EscalationSubject(meta.Tenant, meta.Conversation))
	if err != nil {
		return false, fmt.Errorf("agentworker: %w", err)
	}
	return escalated, nil
}

// taskSettled tells the order gate whether an earlier task of a
// conversation was handled, perhaps by a replica that died before its ack
// counted: the stored state (read from REIN_CONVERSATIONS, which another
// replica's writes reach and this process's memory may not) has finished
// that very turn, and every output the turn yields — steps, reply,
// escalation or report — is stored. A stored reply alone would not do: a
// predecessor redelivered after a later turn began is taken as finished
// and its missing outputs never published. Anything else waits for the
// ack floor (or MaxHold).
func (s *Stage) taskSettled(ctx context.Context, d streams.Decoded) (bool, error) {
	_, turn, ok := taskOf(d)
	if !ok || turn < 1 {
		return false, nil
	}
	st, ok, err := s.store.load(ctx, d.Meta.Tenant, d.Meta.Conversation)
	if err != nil || !ok || st.Turn != turn || !st.TurnDone {
		return false, err
	}
	outs, _ := turnOutputs(schemas.Meta{Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation, Turn: turn}, st, s.cfg.MaxSteps)
	return s.allStored(ctx, outs, turn)
}

// taskOf decodes d as a task and names its turn: the payload's, else the
// event's turn extension. ok is false for another event type or a payload
// that does not decode.
func taskOf(d streams.Decoded) (task schemas.Task, turn int, ok bool) {
	if d.Event.Type() != schemas.TypeTask || d.Payload(&task) != nil {
		return task, 0, false
	}
	return task, cmp.Or(task.Turn, d.Meta.Turn), true
}

// replyStored tells whether the turn is answered: the conversation's last
// stored agent reply (replies are stored in turn order) is of this turn or
// a later one.
func (s *Stage) replyStored(ctx context.Context, meta schemas.Meta) (bool, error) {
	last, found, err := streams.LastTurn(ctx, s.outputs[streams.StreamTurns], streams.TurnSubject(meta.Tenant, meta.Conversation, schemas.RoleAgent))
	if err != nil {
		return false, fmt.Errorf("agentworker: %w", err)
	}
	return found && last >= meta.Turn, nil
}

// run is the agent loop: model → tool calls → results → … until a text
// reply or MaxSteps model calls. State is persisted after every tool
// result, before the turn's events are published: at the end of the turn,
// and after each tool step once the turn has run for LiveStepsAfter.
func (s *Stage) run(ctx context.Context, meta schemas.Meta, st *State) error {
	start := time.Now()
	for !st.TurnDone {
		if calls := st.pending(); len(calls) > 0 {
			if err := s.runCalls(ctx, meta, st, calls); err != nil {
				return err
			}
			// Steps of a quick turn are published with its reply (one
			// round trip fewer per step); a slow turn shows them as it goes.
			if time.Since(start) >= s.cfg.LiveStepsAfter {
				if err := s.publish(ctx, meta, st); err != nil {
					return err
				}
			}
			continue
		}
		if st.ModelCalls >= s.cfg.MaxSteps {
			s.finish(st, OutcomeMaxSteps, s.cfg.MaxStepsReply)
			st.handOff(schemas.ReasonMaxSteps, s.now())
			break
		}
		resp, err := s.firstOrChat(ctx, st)
		if err != nil {
			return err
		}
		st.ModelCalls++
		if len(resp.ToolCalls) == 0 {
			text := strings.TrimSpace(resp.Content)
			if text == "" {
				return fmt.Errorf("%w (turn %d, model call %d)", ErrEmptyReply, st.Turn, st.ModelCalls)
			}
			outcome := OutcomeReply
			if st.EscalatedTurn == st.Turn && st.Status == StatusHuman {
				outcome = OutcomeEscalated
			}
			s.finish(st, outcome, text)
			break
		}
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: s.normalise(st, resp.ToolCalls)})
		if s.backend.External() {
			// Persist the decision before acting on another system, so a
			// resumed turn repeats this very call under the same key.
			if err := s.save(ctx, meta, st); err != nil {
				return err
			}
		}
	}
	if err := s.save(ctx, meta, st); err != nil {
		return err
	}
	return s.publish(ctx, meta, st)
}

// maxReply is the longest reply a turn event carries (its schema's limit).
const maxReply = 65536

func (s *Stage) finish(st *State, outcome, reply string) {
	if len(reply) > maxReply {
		reply = strings.ToValidUTF8(reply[:maxReply-3], "") + "…"
	}
	st.Messages = append(st.Messages, llm.Message{Role: llm.RoleAssistant, Content: reply})
	st.TurnDone, st.Outcome, st.Reply = true, outcome, reply
	st.remember(st.Turn)
}

// firstOrChat is the turn's speculative first answer when it has a usable
// one (see speculate.go), else a model call.
func (s *Stage) firstOrChat(ctx context.Context, st *State) (llm.Response, error) {
	if c := st.spec; c != nil {
		st.spec = nil
		if resp, ok := s.spec.answer(ctx, c); ok {
			return resp, nil
		}
	}
	return s.chat(ctx, st)
}

func (s *Stage) chat(ctx context.Context, st *State) (llm.Response, error) {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ModelTimeout)
	defer cancel()
	resp, err := s.deps.Model.Chat(cctx, llm.Request{Purpose: llm.PurposeAgent, System: s.system,
		Messages: st.Messages, Tools: s.tools, MaxTokens: s.cfg.MaxTokens})
	if err != nil {
		return llm.Response{}, fmt.Errorf("agentworker: model call %d of turn %d: %w", st.ModelCalls+1, st.Turn, err)
	}
	return resp, nil
}

// normalise gives every call a turn-unique id and JSON arguments.
func (s *Stage) normalise(st *State, calls []llm.ToolCall) []llm.ToolCall {
	seen := map[string]bool{}
	for _, m := range st.Messages[st.TurnStart:] {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
		}
	}
	out := make([]llm.ToolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			c.ID = "call_" + strconv.Itoa(st.Turn) + "_" + strconv.Itoa(st.ModelCalls) + "_" + strconv.Itoa(i)
		}
		seen[c.ID] = true
		if len(c.Arguments) == 0 {
			c.Arguments = json.RawMessage(`{}`)
		} else if !json.Valid(c.Arguments) {
			b, _ := json.Marshal(string(c.Arguments))
			c.Arguments = b
		}
		out[i] = c
	}
	return out
}

// runCalls runs the pending calls in order, persisting after each result.
func (s *Stage) runCalls(ctx context.Context, meta schemas.Meta, st *State, calls []llm.ToolCall) error {
	_, steps := turnOutputs(meta, st, s.cfg.MaxSteps)
	for _, c := range calls {
		out, err := s.call(ctx, meta, st, c, steps[c.ID])
		if err != nil {
			return err
		}
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: out})
		if s.cfg.Persist == PersistStep || s.backend.External() {
			if err := s.save(ctx, meta, st); err != nil {
				return err
			}
		}
	}
	return nil
}

// call runs one tool call: the recovery tools here, the rest on the backend.
func (s *Stage) call(ctx context.Context, meta schemas.Meta, st *State, c llm.ToolCall, step int) (string, error) {
	name := c.Name
	if !s.declared[name] {
		name = unknownTool
	}
	ctx, span := telemetry.Tracer().Start(ctx, "rein.tool", trace.WithAttributes(attrTool.String(name), telemetry.AttrTurn.Int(st.Turn)))
	defer span.End()
	out, err := s.callTool(ctx, meta, st, c, step)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "tool failed")
	}
	return out, err
}

// attrTool names the tool of a rein.tool span (declared tools only).
var attrTool = attribute.Key("rein.tool")

func (s *Stage) callTool(ctx context.Context, meta schemas.Meta, st *State, c llm.ToolCall, step int) (string, error) {
	switch {
	case c.Name == schemas.ToolThink:
		s.m.toolCall(c.Name, ToolOK)
		return "", nil
	case c.Name == schemas.ToolAmbiguityReport:
		s.m.toolCall(c.Name, ToolOK)
		return ReportAck, nil
	case c.Name == schemas.ToolTransfer:
		s.m.toolCall(c.Name, ToolOK)
		st.handOff(schemas.ReasonTransfer, s.now())
		return TransferSuccess, nil
	case !s.declared[c.Name]:
		s.m.toolCall(c.Name, ToolError)
		return fmt.Sprintf("Error: unknown tool %s", clip(c.Name, 100)), nil
	}
	out, err := st.conv.Call(ctx, ToolCall{Tenant: meta.Tenant, Conversation: meta.Conversation, Turn: st.Turn, Step: step,
		Name: c.Name, Arguments: c.Arguments})
	switch {
	case err == nil:
		s.m.toolCall(c.Name, ToolOK)
		return out, nil
	case isToolError(err):
		s.m.toolCall(c.Name, ToolError)
		return err.Error(), nil
	default:
		s.m.toolCall(c.Name, ToolFailed)
		return "", fmt.Errorf("agentworker: tool %s (turn %d, step %d): %w", c.Name, st.Turn, step, err)
	}
}

// publish publishes the turn's events not yet published by this worker.
// After a restart it publishes them all again; their ids deduplicate.
func (s *Stage) publish(ctx context.Context, meta schemas.Meta, st *State) error {
	outs, _ := turnOutputs(meta, st, s.cfg.MaxSteps)
	if st.published >= len(outs) {
		return nil
	}
	m := meta
	m.Turn = st.Turn
	batch := make([]streams.Out, 0, len(outs)-st.published)
	for _, o := range outs[st.published:] {
		ev, err := schemas.BuildEvent(o.typ, o.id, "", m, o.data)
		if err != nil {
			return streams.Permanent(fmt.Errorf("agentworker: build %s: %w", o.typ, err))
		}
		batch = append(batch, streams.Out{Stream: o.stream, Subject: o.subject, Event: eventPtr(ev)})
	}
	if _, err := s.deps.Publisher.PublishAll(ctx, batch...); err != nil {
		return err
	}
	st.published = len(outs)
	return nil
}

func eventPtr(e event.Event) *event.Event { return &e }
