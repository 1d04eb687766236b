package agentworker

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// A conversation handed to a human stays on the human path until it is
// given back (released). Each of its later user turns ends with
// dev.rein.unanswered.v1 reason human_path (turnOutputs), which the sinks
// and the handoff desk receive. A release is an event, dev.rein.release.v1
// on rein.releases.<tenant>.<conv>, with id release.<tenant>.<conv>.<turn>
// for the escalation's turn, so a handoff is released once. Two ways:
//   - an operator stores it (Release; `rein handoff release`);
//   - for a conversation handed over agent_unavailable (the model or the
//     tools failed, not the agent's choice), the worker stores it itself
//     at the first user turn after Config.QuietPeriod has passed since the
//     handoff and since the last agent_unavailable this worker saw.
//
// The worker looks for the release at the next user turn of the
// conversation (one direct get), so only its own consume loop ever writes
// the conversation's state; that turn is then answered by the agent.

// humanPath ends turn of a conversation that belongs to a human: the user
// message joins the context (so that a released agent knows what was
// said), the model is not asked, and the turn's outcome is the human_path
// record.
func (s *Stage) humanPath(ctx context.Context, meta schemas.Meta, st *State, task schemas.Task) error {
	st.begin(meta.Turn, schemas.Task{Turn: meta.Turn, UserText: task.UserText, DetectionID: task.DetectionID})
	st.TurnDone, st.Outcome = true, OutcomeHuman
	st.HumanTurns++
	st.remember(meta.Turn)
	if err := s.save(ctx, meta, st); err != nil {
		return err
	}
	if err := s.publish(ctx, meta, st); err != nil {
		return err
	}
	s.m.turns.WithLabelValues(OutcomeHuman).Inc()
	return nil
}

// takeBack tells whether a conversation on the human path goes back to
// the agent at this turn: a release of its handoff is stored, or the quiet
// period of an agent_unavailable handoff has passed (the release is then
// stored first). On true the state is active again.
func (s *Stage) takeBack(ctx context.Context, meta schemas.Meta, st *State) (bool, error) {
	rel, found, err := lastRelease(ctx, s.outputs[bus.StreamOutcomes], meta.Tenant, meta.Conversation)
	if err != nil {
		return false, err
	}
	reason := schemas.ReleaseOperator
	switch {
	case found && rel.Turn >= st.EscalatedTurn:
		if rel.Reason == schemas.ReleaseQuietPeriod {
			reason = rel.Reason
		}
	case s.quietPassed(st):
		reason = schemas.ReleaseQuietPeriod
		rel = schemas.Release{Turn: st.EscalatedTurn, Reason: reason, HandoffReason: st.HandoffReason, By: bus.StageAgentWorker}
		if err := publishRelease(ctx, s.deps.Publisher, meta.Tenant, meta.Conversation, rel, meta.Traceparent); err != nil {
			return false, err
		}
	default:
		return false, nil
	}
	s.m.releases.WithLabelValues(reason).Inc()
	s.deps.Logger.Info("conversation given back to the agent", "tenant", meta.Tenant, "conversation", meta.Conversation,
		"turn", meta.Turn, "escalated_turn", st.EscalatedTurn, "handoff_reason", st.HandoffReason, "release", reason)
	st.giveBack()
	return true, nil
}

// quietPassed: the conversation was handed over agent_unavailable, and the
// quiet period has passed since then and since the last agent_unavailable
// this worker recorded (a model still failing keeps its conversations).
func (s *Stage) quietPassed(st *State) bool {
	q := s.cfg.QuietPeriod
	if q <= 0 || st.HandoffReason != schemas.ReasonAgentUnavailable || st.HandoffAt.IsZero() {
		return false
	}
	now := s.now()
	last := time.Unix(0, s.lastUnavailable.Load())
	return now.Sub(st.HandoffAt) >= q && now.Sub(last) >= q
}

func (s *Stage) now() time.Time {
	if s.deps.Now != nil {
		return s.deps.Now()
	}
	return time.Now()
}

// lastRelease reads the conversation's last stored release.
func lastRelease(ctx context.Context, outcomes jetstream.Stream, tenant, conv string) (schemas.Release, bool, error) {
	var rel schemas.Release
	d, found, err := streams.LastEvent(ctx, outcomes, bus.ReleaseSubject(tenant, conv))
	if err != nil {
		return rel, false, fmt.Errorf("agentworker: %w", err)
	}
	if !found || d.Event.Type() != schemas.TypeRelease || d.Payload(&rel) != nil {
		return rel, false, nil
	}
	return rel, true, nil
}

func publishRelease(ctx context.Context, pub *streams.Publisher, tenant, conv string, rel schemas.Release, traceparent string) error {
	meta := schemas.Meta{Tenant: tenant, Conversation: conv, Turn: rel.Turn, Traceparent: traceparent}
	ev, err := schemas.BuildEvent(schemas.TypeRelease, schemas.EventID("release", tenant, conv, rel.Turn), "", meta, rel)
	if err != nil {
		return streams.Permanent(fmt.Errorf("agentworker: build release: %w", err))
	}
	_, err = pub.Publish(ctx, bus.StreamOutcomes, bus.ReleaseSubject(tenant, conv), &ev)
	return err
}

// Release gives a conversation handed to a human back to the agent (what
// `rein handoff release` runs): it stores the release of the
// conversation's last escalation, by an operator named by. The agent
// worker answers the conversation's next user turn. It fails with
// ErrNotHandedOff when no escalation of the conversation is stored and
// ErrAlreadyReleased when that escalation's release is.
func Release(ctx context.Context, js jetstream.JetStream, pub *streams.Publisher, tenant, conv, by string) (schemas.Release, error) {
	if err := schemas.CheckIDs(tenant, conv); err != nil {
		return schemas.Release{}, err
	}
	outcomes, err := js.Stream(ctx, bus.StreamOutcomes)
	if err != nil {
		return schemas.Release{}, fmt.Errorf("agentworker: stream %s: %w", bus.StreamOutcomes, err)
	}
	d, found, err := streams.LastEvent(ctx, outcomes, bus.EscalationSubject(tenant, conv))
	if err != nil {
		return schemas.Release{}, fmt.Errorf("agentworker: %w", err)
	}
	var esc schemas.Escalation
	if !found || d.Payload(&esc) != nil {
		return schemas.Release{}, fmt.Errorf("%w: %s/%s", ErrNotHandedOff, tenant, conv)
	}
	turn := max(esc.Turn, d.Meta.Turn)
	if rel, found, err := lastRelease(ctx, outcomes, tenant, conv); err != nil {
		return schemas.Release{}, err
	} else if found && rel.Turn >= turn {
		return rel, fmt.Errorf("%w: %s/%s, handed over at turn %d (%s), released by %s", ErrAlreadyReleased, tenant, conv, turn, esc.Reason, rel.Reason)
	}
	rel := schemas.Release{Turn: turn, Reason: schemas.ReleaseOperator, HandoffReason: esc.Reason, By: clip(by, 100)}
	if err := publishRelease(ctx, pub, tenant, conv, rel, d.Meta.Traceparent); err != nil {
		return schemas.Release{}, err
	}
	return rel, nil
}
