package detector_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ptest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/inception"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
)

// A module that names the same error on every turn (dynamic activation)
// once planted it until the conversation's turn cap. An activation of the
// type planted at the turn before is recorded but not planted again; a
// run of such turns is planted once; another type, or the same type after
// a clear turn, is planted.
func TestAnErrorPlantedAtTheTurnBeforeIsNotPlantedAgain(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	m := &fakeModule{answer: func(_ context.Context, in inception.Input) (inception.Decision, error) {
		text := in.Dialogue[len(in.Dialogue)-1].Text
		switch {
		case strings.Contains(text, "that one"):
			return inception.Decision{Rein: true, ErrorType: "anaphora", Category: "ambiguous", RecoveryTool: "ambiguity_report",
				Evidence: "that one", Reasoning: "plan"}, nil
		case strings.Contains(text, "seat"):
			return inception.Decision{Rein: true, ErrorType: "unsupported_action", Category: "unsupported",
				RecoveryTool: "transfer_to_human_agents", Evidence: "seat", Reasoning: "plan"}, nil
		}
		return inception.Decision{}, nil
	}}
	startStage(t, h, m, reg, time.Second)
	users := []string{"cancel that one", "that one, as I said", "yes that one", "hello", "that one please", "and pick my seat"}
	for i, u := range users {
		publishTurn(t, h, "r1", "user", i+1, u)
		publishTurn(t, h, "r1", "agent", i+1, "ok")
	}
	rtest.CheckFor(t, 10*time.Second, "six detections", func() bool { return len(detections(t, h)) == len(users) })
	ds := detections(t, h)
	wantPlanted := []bool{true, false, false, false, true, true}
	for i, want := range wantPlanted {
		d := ds[schemas.EventID("detection", "acme", "r1", i+1)]
		if d.Rein != want {
			t.Errorf("turn %d (%q): rein %v, want %v (%+v)", i+1, users[i], d.Rein, want, d)
		}
	}
	for _, turn := range []int{2, 3} {
		d := ds[schemas.EventID("detection", "acme", "r1", turn)]
		if d.Failed || d.ErrorType != "anaphora" || !strings.Contains(d.FailReason, "not planted again") {
			t.Errorf("turn %d: a held-back repeat keeps the module's type and says why: %+v", turn, d)
		}
	}
	if got := ptest.ToFloat64(mustCounter(t, reg, "rein_detector_repeats_not_planted_total")); got != 2 {
		t.Errorf("repeats not planted = %v, want 2", got)
	}
	if got := ptest.ToFloat64(mustCounter(t, reg, "rein_detector_activations_total")); got != 3 {
		t.Errorf("activations = %v, want 3 (the planted ones)", got)
	}
}
