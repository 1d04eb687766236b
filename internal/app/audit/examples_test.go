package audit

import (
	"context"
	"testing"
	"time"

	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
)

func TestLabelledExamples(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	def, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recordWith(t, js, def, 2)
	// Another tenant's conversation of the same id: its turns never lend
	// their text to acme's labels.
	publish(t, js, turnOut(t, "other", "s00", 1, schemas.RoleUser, "Do you sell gift cards?", t0))
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	lab := func(tenant, conv string, turn int, verdict, typ string, detected bool, when time.Time) labels.Stored {
		l := schemas.Label{Turn: turn, Verdict: verdict, ErrorType: typ, Labeller: "ann", Detected: detected}
		if detected {
			l.DetectedType = "unsupported_domain"
		}
		return labels.Stored{Tenant: tenant, Conversation: conv, Label: l, Time: when}
	}
	ls := []labels.Stored{
		// s00 turn 1 "Can you book me a hotel in Paris?": first a wrong
		// type, then another labeller's later correct label, which counts.
		lab("acme", "s00", 1, schemas.VerdictWrongType, "unsupported_action", true, at(1)),
		lab("acme", "s00", 1, schemas.VerdictCorrect, "", true, at(2)),
		// s00 turn 3 "Hi, I need to change my flight.": a missed error.
		lab("acme", "s00", 3, schemas.VerdictMissedError, "multiple_interpretation", false, at(1)),
		// s01 turn 3 "Thanks, that's all.": a false activation is clean.
		lab("acme", "s01", 3, schemas.VerdictFalseActivation, "", true, at(1)),
		// A turn never stored.
		lab("acme", "s09", 1, schemas.VerdictMissedError, "anaphora", false, at(1)),
	}
	got, missing, err := LabelledExamples(context.Background(), js.JS, TurnSelection{Tenant: "acme"}, ls)
	if err != nil {
		t.Fatal(err)
	}
	if missing != 1 {
		t.Errorf("missing %d, want 1", missing)
	}
	want := map[string]struct {
		text string
		typ  string
	}{
		"label/acme/s00/1": {"Can you book me a hotel in Paris?", "unsupported_domain"},
		"label/acme/s00/3": {"Hi, I need to change my flight.", "multiple_interpretation"},
		"label/acme/s01/3": {"Thanks, that's all.", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d examples, want %d: %+v", len(got), len(want), got)
	}
	for _, e := range got {
		w, ok := want[e.ID]
		if !ok {
			t.Fatalf("unexpected example %s", e.ID)
		}
		text, _ := e.Input.LastUser()
		if text != w.text || e.ErrorType != w.typ || e.Rein != (w.typ != "") || e.Author != LabelAuthor("acme") || e.Input.Tenant != "acme" {
			t.Errorf("%s: text %q type %q rein %v author %q, want %q %q", e.ID, text, e.ErrorType, e.Rein, e.Author, w.text, w.typ)
		}
		// The surface context is the conversation's up to the turn.
		if e.ID == "label/acme/s00/3" && len(e.Input.Dialogue) != 5 {
			t.Errorf("%s: %d utterances of context, want 5", e.ID, len(e.Input.Dialogue))
		}
	}
}
