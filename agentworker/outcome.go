package agentworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Every user turn ends with exactly one outcome. Besides a reply (and the
// escalations and reports the agent's own tools yield), two paths end a
// turn the agent did not answer, each with an explicit event:
//   - deadLettered: the turn failed for good. A usable task whose run
//     failed past every retry (model or tools down) hands the conversation
//     to a human: escalation reason agent_unavailable, carrying the user's
//     message. A task rein cannot use (ErrPermanent) ends with
//     dev.rein.unanswered.v1 reason failed. A task that is not rein's
//     (unverified_task) records nothing: the dead letter is all there is.
//   - supersede: a later turn of the conversation ran first.

// deadLettered is the consumer's OnDeadLetter: it records the outcome of a
// task about to be dead-lettered.
func (s *Stage) deadLettered(ctx context.Context, d streams.Decoded, cause error) error {
	if errors.Is(cause, schemas.ErrUnverified) {
		// Not rein's task: it says nothing about the turn it names, whose
		// real task may still come (and must then run).
		return nil
	}
	task, turn, ok := taskOf(d)
	if !ok || turn < 1 {
		return nil // not a task: the dead letter is all there is to record
	}
	meta := schemas.Meta{Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation, Turn: turn, Traceparent: d.Meta.Traceparent}
	st, err := s.load(ctx, meta)
	if err != nil {
		return err
	}
	switch {
	case st.Turn == turn && st.TurnDone:
		// The turn finished, yet its handler failed past every retry: its
		// outputs could not all be stored (an output stream without a
		// leader for that long). They are its outcome, so publish them
		// now; while that fails, the consumer hands the task back rather
		// than dead-lettering a turn whose reply was never stored.
		if err := s.publish(ctx, meta, st); err != nil && !errors.Is(err, streams.ErrPermanent) {
			return err
		}
		return nil
	case st.Turn > turn:
		return nil // it has its outcome already
	}
	if st.Turn != turn {
		st.begin(turn, task)
	}
	outcome := OutcomeUnavailable
	if errors.Is(cause, streams.ErrPermanent) {
		outcome = OutcomeFailed
	}
	st.TurnDone, st.Outcome, st.Reply = true, outcome, clip(cause.Error(), 1000)
	if outcome == OutcomeUnavailable {
		st.handOff(schemas.ReasonAgentUnavailable, s.now())
		s.lastUnavailable.Store(s.now().UnixNano())
	}
	st.remember(turn)
	if err := s.save(ctx, meta, st); err != nil {
		return err
	}
	if err := s.publish(ctx, meta, st); err != nil {
		return err
	}
	if s.spec != nil {
		s.spec.finished(bus.ConversationKey(meta.Tenant, meta.Conversation), st)
	}
	s.m.turns.WithLabelValues(outcome).Inc()
	s.deps.Logger.Warn("turn not answered by the agent", "tenant", meta.Tenant, "conversation", meta.Conversation,
		"turn", turn, "outcome", outcome, "err", cause)
	return nil
}

// supersede ends turn, overtaken by the later st.Turn, with an explicit
// record.
func (s *Stage) supersede(ctx context.Context, meta schemas.Meta, st *State, turn int) error {
	meta.Turn = turn
	ev, err := schemas.BuildEvent(schemas.TypeUnanswered, schemas.EventID("unanswered", meta.Tenant, meta.Conversation, turn), "", meta,
		schemas.Unanswered{Turn: turn, Reason: schemas.UnansweredSuperseded, SupersededBy: st.Turn})
	if err != nil {
		return streams.Permanent(fmt.Errorf("agentworker: build superseded record: %w", err))
	}
	if _, err := s.deps.Publisher.Publish(ctx, bus.StreamOutcomes, bus.UnansweredSubject(meta.Tenant, meta.Conversation), &ev); err != nil {
		return err
	}
	st.remember(turn)
	s.m.turns.WithLabelValues(OutcomeSuperseded).Inc()
	s.deps.Logger.Warn("turn superseded: a later turn of the conversation ran first", "tenant", meta.Tenant,
		"conversation", meta.Conversation, "turn", turn, "superseded_by", st.Turn)
	return nil
}
