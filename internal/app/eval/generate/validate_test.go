package generate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
)

func airlineChecker() *checker {
	return newChecker(taubench.Airline, inception.DefaultTaxonomy(),
		[]llm.Tool{{Name: "get_reservation_details"}, {Name: "cancel_reservation"}})
}

// good is an anaphora opening that passes.
func good() Draft {
	return Draft{
		ErrorTurn:   "Hi, my user id is aarav_garcia_1177. Could you push that one back by a day?",
		Evidence:    []string{"push that one back"},
		Readings:    []string{"M05KNL", "UHDAHF"},
		Mishandling: "Of course. I will move your Charlotte trip one day later.",
		FollowUp:    "Hmm, that's not really what I meant.",
	}
}

func TestValidateAcceptsAGoodOpening(t *testing.T) {
	if r := airlineChecker().Validate(eval.TypeAnaphora, eval.StyleLazyFeedback, good(), 2); r != "" {
		t.Fatalf("rejected: %s", r)
	}
}

func TestValidateRejects(t *testing.T) {
	type tc struct {
		name, errorType, style string
		edit                   func(*Draft)
		candidates             int
		want                   string
	}
	cases := []tc{
		{"error turn lacks the error (evidence not in it)", eval.TypeAnaphora, eval.StyleLazyFeedback,
			func(d *Draft) {
				d.ErrorTurn = "Hi, my user id is aarav_garcia_1177. Please move reservation M05KNL by a day."
			}, 2, "is not in the error turn"},
		{"no evidence", eval.TypeAnaphora, eval.StyleLazyFeedback, func(d *Draft) { d.Evidence = nil }, 2, ReasonNoEvidence},
		{"evidence names a tool", eval.TypeAnaphora, eval.StyleLazyFeedback, func(d *Draft) {
			d.ErrorTurn += " Use cancel_reservation on it."
			d.Evidence = []string{"Use cancel_reservation on it"}
		}, 2, planted.EvidenceNamesTool},
		{"anaphora without a referring word", eval.TypeAnaphora, eval.StyleLazyFeedback, func(d *Draft) { d.Evidence = []string{"back by a day"} }, 2, ReasonNoReferringWord},
		{"anaphora naming the id", eval.TypeAnaphora, eval.StyleLazyFeedback, func(d *Draft) { d.ErrorTurn += " I mean M05KNL." }, 2, "names M05KNL"},
		{"anaphora with one candidate", eval.TypeAnaphora, eval.StyleLazyFeedback, func(*Draft) {}, 1, ReasonOneCandidate},
		{"multiple interpretation with one reading", eval.TypeMultipleInterpretation, eval.StyleLazyFeedback, func(d *Draft) { d.Readings = []string{"a", " A "} }, 2, ReasonTwoReadings},
		{"contradiction with one statement", eval.TypeContradiction, eval.StyleLazyFeedback, func(*Draft) {}, 2, ReasonTwoStatements},
		{"contradiction whose statements are one", eval.TypeContradiction, eval.StyleLazyFeedback,
			func(d *Draft) { d.Evidence = []string{"push that one back", "that one"} }, 2, ReasonTwoStatements},
		{"unsupported request without what is out of reach", eval.TypeUnsupportedDomain, eval.StyleLazyFeedback,
			func(d *Draft) { d.Readings = nil }, 2, ReasonOutOfReach},
		{"mishandling asks which one", eval.TypeAnaphora, eval.StyleLazyFeedback,
			func(d *Draft) { d.Mishandling = "Sure, which reservation do you mean?" }, 2, "already recovers: it asks which one is meant"},
		{"mishandling transfers", eval.TypeUnsupportedAction, eval.StyleLazyFeedback,
			func(d *Draft) { d.Mishandling = "Let me transfer you to a colleague." }, 2, "already recovers: it hands the conversation to a person"},
		{"mishandling refuses", eval.TypeUnsupportedAction, eval.StyleLazyFeedback,
			func(d *Draft) { d.Mishandling = "I'm afraid I can't do that." }, 2, "already recovers: it says the request cannot be done"},
		{"mishandling names a recovery tool", eval.TypeAnaphora, eval.StyleLazyFeedback,
			func(d *Draft) { d.Mishandling = "Filing an ambiguity_report now." }, 2, "already recovers: it names a recovery tool"},
		{"double check that does not ask", eval.TypeAnaphora, eval.StyleDoubleCheck, func(*Draft) {}, 2, ReasonNoDoubleCheck},
		{"lazy feedback that asks for a check", eval.TypeAnaphora, eval.StyleLazyFeedback,
			func(d *Draft) { d.FollowUp = "Can you double-check that?" }, 2, ReasonLazyAsksCheck},
		{"follow-up giving the answer away", eval.TypeAnaphora, eval.StyleLazyFeedback,
			func(d *Draft) { d.FollowUp = "No, I meant M05KNL." }, 2, "follow_up names M05KNL"},
		{"overlong follow-up", eval.TypeAnaphora, eval.StyleLazyFeedback,
			func(d *Draft) { d.FollowUp = strings.Repeat("Not what I meant. ", 30) }, 2, "follow_up is 540 characters long"},
		{"empty mishandling", eval.TypeAnaphora, eval.StyleLazyFeedback, func(d *Draft) { d.Mishandling = " " }, 2, "mishandling is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := good()
			c.edit(&d)
			got := airlineChecker().Validate(c.errorType, c.style, d, c.candidates)
			if got == "" || !strings.Contains(got, c.want) {
				t.Errorf("reason %q, want one containing %q", got, c.want)
			}
		})
	}
}

// The hand-written bundled openings' mishandlings do not recover: the
// check holds them to what they were written to be.
func TestBundledMishandlingsDoNotRecover(t *testing.T) {
	set, err := eval.LoadScenarios(bytes.NewReader(eval.BundledJSONL()), eval.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range set {
		if s.Opening == nil {
			continue
		}
		if r := Recovers(s.Opening.Mishandling); r != "" {
			t.Errorf("%s: %q %s", s.ID, s.Opening.Mishandling, r)
		}
	}
}

func TestPickTasksIsSeededAndBounded(t *testing.T) {
	a, b, c := pickTasks(50, 5, 1), pickTasks(50, 5, 1), pickTasks(50, 5, 2)
	if len(a) != 5 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed: %v and %v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 1 and 2 drew the same tasks %v", a)
	}
	if all := pickTasks(4, 0, 1); len(all) != 4 {
		t.Errorf("no limit: %v", all)
	}
}
