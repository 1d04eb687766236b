package run

import (
	"context"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/app/eval"
)

// silentModule is the inception module of the conditions without rein:
// it never activates and costs nothing, so the pipeline runs as rein's
// does with nothing planted.
type silentModule struct{}

func (silentModule) Name() string { return "none" }

func (silentModule) Detect(context.Context, inception.Input) (inception.Decision, error) {
	return inception.Decision{Model: "none"}, nil
}

// notJudged is the model of the decisions a fixed trigger makes without
// asking the module.
const notJudged = "not-judged"

// triggerModule applies the trigger mode to the condition's module: in
// dynamic mode every user turn from the planting point on is judged, in
// fixed mode only the scenario's planting point (eval.Scenario.PlantTurn:
// the opening's follow-up, or with atErrorTurn the error turn) is judged;
// the others get a decision of "no" without a model call. The scenario is
// found through the tap by the dialogue's first user utterance.
type triggerModule struct {
	inner       inception.Module
	fixed       bool
	tap         *tap
	atErrorTurn bool
}

func (m triggerModule) Name() string { return m.inner.Name() }

func (m triggerModule) Detect(ctx context.Context, in inception.Input) (inception.Decision, error) {
	plant := m.plantTurn(in.Dialogue)
	// Fixed: the planting point only. Dynamic: every turn from it on; the
	// opening's turns before it are answered by the recorded reply, so a
	// thought planted there would reach no decision of the agent's.
	if n := userUtterances(in.Dialogue); m.fixed && n != plant || n < plant {
		return inception.Decision{Model: notJudged}, nil
	}
	dec, err := m.inner.Detect(ctx, in)
	if err != nil || dec.Rein || plant == eval.ErrorTurnIndex || userUtterances(in.Dialogue) != plant || m.inner.Name() != inception.ModuleRules {
		return dec, err
	}
	// The rules module judges the newest user turn (with a window of
	// context), and a follow-up pushing back ("that is not what I meant")
	// carries no cue of its own: for it, judging the opening as a whole
	// means judging each of its user turns, newest first. A model module
	// is asked once, with the whole opening.
	for i := len(in.Dialogue) - 2; i >= 0; i-- {
		if in.Dialogue[i].Role != inception.RoleUser {
			continue
		}
		earlier := in
		earlier.Dialogue = in.Dialogue[:i+1]
		again, err := m.inner.Detect(ctx, earlier)
		if err != nil || again.Rein {
			return again, err
		}
	}
	return dec, nil
}

func userUtterances(d []inception.Utterance) int {
	n := 0
	for _, u := range d {
		if u.Role == inception.RoleUser {
			n++
		}
	}
	return n
}

// plantTurn is the user turn the fixed trigger judges in the conversation
// whose dialogue is d.
func (m triggerModule) plantTurn(d []inception.Utterance) int {
	if m.tap != nil {
		for _, u := range d {
			if u.Role != inception.RoleUser {
				continue
			}
			if cv := m.tap.lookup(u.Text); cv != nil {
				return cv.scenario.PlantTurn(m.atErrorTurn)
			}
			break
		}
	}
	return eval.ErrorTurnIndex
}
