package agentworker

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
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
		// Delivered again after it finished. The consume loop acks it
		// unhandled when all its outputs are stored; it asks only for an
		// input delivered before or old, so a worker that did not publish
		// the turn itself (a restart, a durable made anew) asks here.
		if outs := s.events(meta, st); d.Outputs == streams.StoredNone && st.published < len(outs) {
			if have, err := s.stored(ctx, s.outputs, d); err != nil || have == streams.StoredAll {
				if err == nil {
					st.published = len(outs)
				}
				return err
			}
		}
		// Publish what is missing, the ids dropping what the window holds.
		return s.publish(ctx, meta, st)
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
		// A turn the state does not know of (stored reports an old one
		// answered, or handed to a human, to the consume loop).
		s.begin(meta, st, task)
	}
	start := time.Now()
	if err := s.run(ctx, meta, st); err != nil {
		return err
	}
	if s.spec != nil {
		s.spec.finished(bus.ConversationKey(meta.Tenant, meta.Conversation), st)
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
		st.spec = s.spec.take(bus.ConversationKey(meta.Tenant, meta.Conversation), st, task)
	}
}

// stored is the stage's answer to the consume loop (ConsumerConfig.Stored):
// what of a task's outputs is stored. The loop asks it for a task
// delivered again or older than the recheck age, and for a held task's
// predecessor (another replica may have handled it before its ack
// counted). The conversation's state (this worker's, else the stored one,
// which another replica's writes reach) decides:
//   - it finished this very turn: all, when every output the turn yields
//     (steps, reply, escalation or report) is stored; some otherwise, and
//     the handler publishes them again. A stored reply alone would not do:
//     a predecessor taken as finished would never publish the rest;
//   - it is at this turn or a later one, or on the human path: none, the
//     handler decides (resume, supersede, human_path record);
//   - it does not know the turn: the state may have expired after the turn
//     was answered (its reply, or a later one, is stored), or, with no
//     state left, after the conversation was handed to a human (an
//     escalation is stored, and the turn must not reach the model): all.
func (s *Stage) stored(ctx context.Context, out streams.OutputStreams, d streams.Decoded) (streams.Stored, error) {
	_, turn, ok := taskOf(d)
	if !ok || turn < 1 {
		return streams.StoredNone, nil
	}
	meta := schemas.Meta{Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation, Turn: turn}
	st, known := s.cache.Get(bus.ConversationKey(meta.Tenant, meta.Conversation))
	if !known {
		var err error
		if st, known, err = s.store.load(ctx, meta.Tenant, meta.Conversation, meta.Turn); err != nil {
			return streams.StoredNone, err
		}
	}
	switch {
	case known && st.Turn == turn && st.TurnDone:
		outs := s.events(meta, st)
		if all, err := allStored(ctx, out, outs, turn); err != nil || !all {
			return streams.StoredSome, err
		}
		return streams.StoredAll, nil
	case known && (st.Turn >= turn || st.Status == StatusHuman):
		return streams.StoredNone, nil
	}
	last, answered, err := streams.LastTurn(ctx, out[bus.StreamTurns], bus.TurnSubject(meta.Tenant, meta.Conversation, schemas.RoleAgent))
	if err != nil {
		return streams.StoredNone, fmt.Errorf("agentworker: %w", err)
	}
	if answered && last >= turn {
		return streams.StoredAll, nil
	}
	if known {
		return streams.StoredNone, nil
	}
	_, escalated, err := streams.LastTurn(ctx, out[bus.StreamOutcomes], bus.EscalationSubject(meta.Tenant, meta.Conversation))
	if err != nil {
		return streams.StoredNone, fmt.Errorf("agentworker: %w", err)
	}
	if escalated {
		return streams.StoredAll, nil
	}
	return streams.StoredNone, nil
}

// allStored tells whether every output of a turn is stored. The outputs on
// one subject are published in order on one connection, and a stream
// stores a connection's messages in the order sent, so they are all stored
// when the subject's last stored event is the turn's last output there, or
// of a later turn.
func allStored(ctx context.Context, streamsOf streams.OutputStreams, outs []output, turn int) (bool, error) {
	last := map[string]output{} // subject → the turn's last output on it
	for _, o := range outs {
		last[o.subject] = o
	}
	for subject, o := range last {
		d, found, err := streams.LastEvent(ctx, streamsOf[o.stream], subject)
		if err != nil {
			return false, fmt.Errorf("agentworker: %w", err)
		}
		if !found || (d.Meta.Turn <= turn && d.Event.ID() != o.id) {
			return false, nil
		}
	}
	return true, nil
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

// run is the agent loop: model → tool calls → results → … until a text
// reply or MaxSteps model calls. State is persisted after the tool results
// runCalls names and at the end of the turn, always before the turn's
// events are published: at the end of the turn, and after each tool step
// once the turn has run for LiveStepsAfter.
func (s *Stage) run(ctx context.Context, meta schemas.Meta, st *State) error {
	start := time.Now()
	for !st.TurnDone {
		if calls := st.pending(); len(calls) > 0 {
			if time.Since(start) >= s.cfg.LiveStepsAfter {
				s.goLive(st) // before the calls, so a write of theirs holds the mark
			}
			if err := s.runCalls(ctx, meta, st, calls); err != nil {
				return err
			}
			// Steps of a quick turn are published with its reply (one
			// round trip fewer per step); a slow turn shows them as it goes.
			if time.Since(start) >= s.cfg.LiveStepsAfter {
				s.goLive(st)
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

// runCalls runs the pending calls in order. With Persist "step" it writes
// the State after each result whose call changed the conversation's
// state, and after every result of an external backend: a resumed turn
// must never apply such a call again. A result that changed nothing (a
// read, think, a report, a hand-off decided but not yet published) waits
// for the next write: a turn resumed without it asks the model again, and
// none of its events is published before it is written (publish).
func (s *Stage) runCalls(ctx context.Context, meta schemas.Meta, st *State, calls []llm.ToolCall) error {
	for _, c := range calls {
		before, counted := writes(st.conv)
		out, err := s.call(ctx, meta, st, c, callStep(st, c.ID))
		if err != nil {
			return err
		}
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: out})
		switch after, _ := writes(st.conv); {
		case s.backend.External() || s.cfg.Persist == PersistStep && (!counted || after != before):
			if err := s.save(ctx, meta, st); err != nil {
				return err
			}
		case s.cfg.Persist == PersistStep:
			st.unsaved = true
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
// A result not yet written is written first: every published step is in
// the stored State, so a resumed turn never contradicts one.
func (s *Stage) publish(ctx context.Context, meta schemas.Meta, st *State) error {
	outs := s.events(meta, st)
	if st.published >= len(outs) {
		return nil
	}
	if st.unsaved {
		if err := s.save(ctx, meta, st); err != nil {
			return err
		}
	}
	m := meta
	m.Turn = st.Turn
	batch := make([]streams.Out, 0, len(outs)-st.published)
	built := make([]schemas.Built, len(outs)-st.published)
	for i, o := range outs[st.published:] {
		var err error
		if built[i], err = schemas.Build(o.typ, o.id, "", m, o.data); err != nil {
			return streams.Permanent(fmt.Errorf("agentworker: build %s: %w", o.typ, err))
		}
		batch = append(batch, streams.Out{Stream: o.stream, Subject: o.subject, Built: &built[i]})
	}
	if _, err := s.deps.Publisher.PublishAll(ctx, batch...); err != nil {
		return err
	}
	st.published = len(outs)
	return nil
}
