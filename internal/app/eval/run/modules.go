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
// fixed mode only user turn eval.ErrorTurnIndex is judged (the others get
// a decision of "no" without a model call).
type triggerModule struct {
	inner inception.Module
	fixed bool
}

func (m triggerModule) Name() string { return m.inner.Name() }

func (m triggerModule) Detect(ctx context.Context, in inception.Input) (inception.Decision, error) {
	if m.fixed && userUtterances(in.Dialogue) != eval.ErrorTurnIndex {
		return inception.Decision{Model: notJudged}, nil
	}
	return m.inner.Detect(ctx, in)
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
