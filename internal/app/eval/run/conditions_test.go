package run

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
)

func defaultTaxonomy(t *testing.T) *inception.Taxonomy {
	t.Helper()
	return inception.DefaultTaxonomy()
}

// NPI keeps the policy as it is and appends every type the module would
// see, with its recovery plan and tool; a held-out type is not told.
func TestNPIPromptAppendsTheTaxonomy(t *testing.T) {
	tax := defaultTaxonomy(t)
	for i := range tax.ErrorTypes {
		if tax.ErrorTypes[i].Name == "contradiction" {
			tax.ErrorTypes[i].HeldOut = true
		}
	}
	p := NPIPrompt("# Airline policy\nBe kind.\n", tax)
	if !strings.HasPrefix(p, "# Airline policy\nBe kind.\n\n") {
		t.Errorf("policy changed:\n%s", p)
	}
	for _, want := range []string{"anaphora", "multiple_interpretation", "unsupported_action", "unsupported_parameter", "unsupported_domain", "tool: ambiguity_report", "tool: transfer_to_human_agents"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if strings.Contains(p, "contradiction (") || strings.Contains(p, inception.EvidenceSlot) {
		t.Errorf("held-out type or an unfilled slot in the prompt:\n%s", p)
	}
}

// In fixed mode only the error turn reaches the module; in dynamic mode
// every user turn does.
func TestTriggerModes(t *testing.T) {
	calls := 0
	inner := countingModule{n: &calls}
	dialogue := []inception.Utterance{{Role: "user", Text: "a"}}
	for _, tc := range []struct {
		fixed bool
		want  int
	}{{true, 1}, {false, 3}} {
		calls = 0
		m := triggerModule{inner: inner, fixed: tc.fixed}
		d := dialogue
		for turn := 1; turn <= 3; turn++ {
			dec, err := m.Detect(context.Background(), inception.Input{Dialogue: d})
			if err != nil {
				t.Fatal(err)
			}
			if tc.fixed && turn > 1 && (dec.Rein || dec.Model != notJudged) {
				t.Errorf("fixed, turn %d: %+v", turn, dec)
			}
			d = append(d, inception.Utterance{Role: "agent", Text: "b"}, inception.Utterance{Role: "user", Text: "c"})
		}
		if calls != tc.want {
			t.Errorf("fixed=%v: module judged %d turns, want %d", tc.fixed, calls, tc.want)
		}
	}
}

type countingModule struct{ n *int }

func (countingModule) Name() string { return "counting" }

func (m countingModule) Detect(context.Context, inception.Input) (inception.Decision, error) {
	*m.n++
	return inception.Decision{Rein: true, ErrorType: "anaphora"}, nil
}

// With a recorded opening, dynamic mode judges every turn from the
// planting point on: the error turn is answered by the recorded
// mishandling, so a thought planted there would reach no decision of the
// agent's (and, planted, would stop the follow-up's plant as a repeat).
func TestDynamicJudgesFromThePlantingPoint(t *testing.T) {
	s := bundled(t, "ret-ana-1")
	tp, _ := registered(t, s.Opening.ErrorTurn, s, taubench.Task{})
	for _, tc := range []struct {
		fixed bool
		want  []int
	}{{true, []int{2}}, {false, []int{2, 3, 4}}} {
		m := triggerModule{inner: countingModule{n: new(int)}, fixed: tc.fixed, tap: tp}
		d := []inception.Utterance{{Role: "user", Text: s.Opening.ErrorTurn}}
		var judged []int
		for turn := 1; turn <= 4; turn++ {
			dec, err := m.Detect(context.Background(), inception.Input{Dialogue: d})
			if err != nil {
				t.Fatal(err)
			}
			if dec.Model != notJudged {
				judged = append(judged, turn)
			}
			d = append(d, inception.Utterance{Role: "agent", Text: "b"}, inception.Utterance{Role: "user", Text: "c"})
		}
		if !slices.Equal(judged, tc.want) {
			t.Errorf("fixed=%v: judged turns %v, want %v", tc.fixed, judged, tc.want)
		}
	}
}
