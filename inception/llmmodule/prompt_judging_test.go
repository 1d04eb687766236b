package llmmodule

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// The prompt separates each confusable pair with one contrastive example
// (issue 22): every contrast is in the static prompt, with both sides.
func TestPromptSeparatesConfusablePairs(t *testing.T) {
	p := BuildStaticPrompt(inception.DefaultTaxonomy(), "airline", inceptiontest.MiniTools(t, "airline"))
	section := between(t, p, "Telling confusable types apart:", "How to judge hard cases:")
	for _, want := range []struct{ pair, a, b string }{
		{"anaphora vs multiple_interpretation", `"Cancel that one." is anaphora`, `"Cancel my Denver trip." is multiple_interpretation`},
		{"unsupported_action vs unsupported_parameter vs unsupported_domain", `unsupported_action ("Can I pick a window seat?"`, `unsupported_parameter ("Change my cabin to first class."`},
		{"unsupported_action vs unsupported_parameter vs unsupported_domain", `unsupported_parameter ("Change my cabin`, `unsupported_domain ("Book me a hotel too."`},
		{"contradiction vs no error", `("Yes, go ahead. No wait, don't.")`, `("Add insurance... actually no, forget that, just the bag."`},
	} {
		line := lineWith(section, "- "+want.pair+":")
		if line == "" {
			t.Errorf("no contrast %q in:\n%s", want.pair, section)
			continue
		}
		if !strings.Contains(line, want.a) || !strings.Contains(line, want.b) {
			t.Errorf("contrast %q lacks %q or %q:\n%s", want.pair, want.a, want.b, line)
		}
	}
}

// Each open point the issue lists is closed by a rule of the prompt.
func TestPromptClosesOpenPoints(t *testing.T) {
	p := BuildStaticPrompt(inception.DefaultTaxonomy(), "retail", inceptiontest.MiniTools(t, "retail"))
	judging := between(t, p, "How to judge hard cases:", "Recovery tools available to the agent:")
	for point, frags := range map[string][]string{
		"pushback on an open request and its evidence": {`"That's not helpful."`, "judge that earlier request", "quote from the last user utterance", "a quote from an earlier turn is refused"},
		"a complaint about the agent":                  {"A complaint about the agent is not a contradiction", `"That's not what I told you earlier`},
		"a self-correction":                            {"A self-correction is allowed", `"add insurance... actually no, forget that"`, "rein=false"},
		"two errors in one turn":                       {"Two errors in one turn", "unsupported type wins over an ambiguous one", "contradiction before multiple_interpretation before anaphora", "unsupported_domain before unsupported_action before unsupported_parameter"},
		"reasoning when rein is false":                 {"When rein is false", "evidence and reasoning are empty strings"},
		"asking for a human":                           {"Asking for a human agent", "is not an error"},
		"limits the tools do not state":                {"A limit they do not state", "how many passengers", "whether a bag or a passenger can be removed", "not an unsupported parameter"},
	} {
		for _, f := range frags {
			if !strings.Contains(judging, f) {
				t.Errorf("%s: the prompt's rules lack %q", point, f)
			}
		}
	}
	// The answer format says what a turn without error carries.
	if !strings.Contains(p, "error_type is null exactly when rein is false; then evidence and reasoning are empty strings") {
		t.Error("the answer format does not say evidence and reasoning are empty when rein is false")
	}
	// "That's not what I told you earlier" is no longer a contradiction
	// example: it is the complaint the rules above clear.
	contra := between(t, p, "## contradiction", "## unsupported_action")
	if strings.Contains(contra, "Example: That's not what I told you earlier") {
		t.Error("a complaint about the agent is still given as a contradiction example")
	}
}

// A held-out type leaves the prompt with every contrast and rule naming it.
func TestHeldOutTypeLeavesContrastsAndRules(t *testing.T) {
	data := strings.Replace(string(inception.DefaultTaxonomyYAML()), "    held_out: false\n    recovery_plan: >-\n      The user's words", "    held_out: true\n    recovery_plan: >-\n      The user's words", 1)
	tax, err := inception.ParseTaxonomy("held.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if et, _ := tax.Type(inception.TypeAnaphora); !et.HeldOut {
		t.Fatal("anaphora not held out by the edit")
	}
	p := BuildStaticPrompt(tax, "airline", nil)
	if strings.Contains(p, "anaphora") {
		t.Errorf("the prompt names the held-out type:\n%s", p)
	}
	if len(tax.PromptContrasts()) != len(tax.Contrasts)-1 || len(tax.PromptJudging()) != len(tax.Judging)-1 {
		t.Errorf("contrasts %d of %d, rules %d of %d: want one of each left out", len(tax.PromptContrasts()), len(tax.Contrasts), len(tax.PromptJudging()), len(tax.Judging))
	}
}

func TestInvalidContrastsNameFieldAndLine(t *testing.T) {
	base := string(inception.DefaultTaxonomyYAML())
	for _, tc := range []struct{ name, from, to, want string }{
		{"not a type name", "  - types: [anaphora, multiple_interpretation]", "  - types: [anaphora, Vague Ness]", "contrasts[0].types[1]: \"Vague Ness\" is not an error type name"},
		{"no type", "  - types: [contradiction]", "  - types: []", "contrasts[2].types: a contrast needs at least one error type"},
	} {
		doc := strings.Replace(base, tc.from, tc.to, 1)
		if doc == base {
			t.Fatalf("%s: edit did not apply", tc.name)
		}
		_, err := inception.ParseTaxonomy("t.yaml", []byte(doc))
		if !errors.Is(err, inception.ErrInvalidTaxonomy) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.yaml:") {
			t.Errorf("%s: err %v, want one with a line and %q", tc.name, err, tc.want)
		}
	}
}

// The llm module parses and grounds the answers the rules above ask for.
func TestLLMAnswersForTheHardCases(t *testing.T) {
	hotel := []string{"Can you book me a hotel in Denver for Friday?", "Let me see what I can find for you.", "That's not helpful."}
	cases := []struct {
		name, answer string
		dialogue     []string
		rein         bool
		typ, ev      string
		failReason   string // a substring; "" = none
	}{
		{"pushback: the open request's type, the pushback's words", `{"rein":true,"error_type":"unsupported_domain","evidence":"That's not helpful","reasoning":"transfer"}`,
			hotel, true, inception.TypeUnsupportedDomain, "That's not helpful", ""},
		{"pushback: a quote of the earlier turn is refused, the type stays", `{"rein":true,"error_type":"unsupported_domain","evidence":"book me a hotel in Denver","reasoning":"transfer"}`,
			hotel, true, inception.TypeUnsupportedDomain, "", planted.EvidenceNotQuoted},
		{"complaint about the agent: no error", `{"rein":false,"error_type":null,"evidence":"","reasoning":""}`,
			[]string{"Move 1N99U6 to the 25th.", "I found flights on May 24.", "That's not what I told you earlier, I said the 25th."}, false, "", "", ""},
		{"self-correction: no error", `{"rein":false,"error_type":null,"evidence":"","reasoning":""}`,
			[]string{"Add insurance to FQ8APE... actually no, forget that, just the bag."}, false, "", "", ""},
		{"asking for a human: no error", `{"rein":false,"error_type":null,"evidence":"","reasoning":""}`,
			[]string{"Can I talk to a real person please?"}, false, "", "", ""},
		{"rein false: a stray quote and reasoning plant nothing", `{"rein":false,"error_type":null,"evidence":"a real person","reasoning":"call transfer_to_human_agents"}`,
			[]string{"Can I talk to a real person please?"}, false, "", "", ""},
		{"two errors: the unsupported one is reported", `{"rein":true,"error_type":"unsupported_action","evidence":"pick a window seat","reasoning":"transfer"}`,
			[]string{"Hi", "You have ABC123 and XYZ789.", "Change that one and pick a window seat for me."}, true, inception.TypeUnsupportedAction, "pick a window seat", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewLLM(LLMConfig{Client: inceptiontest.Answering(tc.answer)})
			if err != nil {
				t.Fatal(err)
			}
			d, err := m.Detect(context.Background(), inceptiontest.AirlineInput(t, tc.dialogue...))
			if err != nil {
				t.Fatal(err)
			}
			if d.Rein != tc.rein || d.ErrorType != tc.typ || d.Evidence != tc.ev || d.Failed {
				t.Fatalf("decision %+v", d)
			}
			if tc.failReason == "" && d.FailReason != "" || !strings.Contains(d.FailReason, tc.failReason) {
				t.Errorf("fail reason %q, want %q", d.FailReason, tc.failReason)
			}
			if !d.Rein && (d.Reasoning != "" || d.Evidence != "") {
				t.Errorf("a turn without error carries reasoning %q / evidence %q", d.Reasoning, d.Evidence)
			}
			if d.Rein {
				et := inceptiontest.MustType(t, tc.typ)
				if d.Reasoning != planted.RenderPlan(et.RecoveryPlan, d.Evidence) {
					t.Errorf("reasoning %q is not the type's plan", d.Reasoning)
				}
			}
		})
	}
}

func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	j := strings.Index(s, to)
	if i < 0 || j < i {
		t.Fatalf("no section %q … %q in the prompt", from, to)
	}
	return s[i:j]
}

func lineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// A provider's copy of the default file without one of its types still
// loads; the contrasts and rules naming the dropped type leave the prompt.
func TestDroppedTypeLeavesContrastsAndRules(t *testing.T) {
	base := string(inception.DefaultTaxonomyYAML())
	start := strings.Index(base, "  - name: unsupported_domain\n")
	end := strings.Index(base, "\n# Shown to the model after the types")
	if start < 0 || end < start {
		t.Fatal("default file layout changed")
	}
	tax, err := inception.ParseTaxonomy("without.yaml", []byte(base[:start]+base[end+1:]))
	if err != nil {
		t.Fatalf("a copy without unsupported_domain: %v", err)
	}
	p := BuildStaticPrompt(tax, "airline", nil)
	if strings.Contains(p, "unsupported_domain") {
		t.Errorf("the prompt names the dropped type")
	}
	if !strings.Contains(p, "anaphora vs multiple_interpretation") || !strings.Contains(p, "A self-correction is allowed") {
		t.Errorf("contrasts and rules not naming the dropped type were lost")
	}
}

// The rules module asks for the agent's replies whenever a check that
// reads them could fire (the detector stage's context contract): a
// "that one" with a descriptor, a possessive, a read-back agreed to with
// an amount.
func TestRulesNeedsContextForTheNewSignals(t *testing.T) {
	m, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range []string{"Change that one to economy.", "his birthday is wrong, fix it", "yes that's right, just the 3 bags",
		"cancel the one on the 24th", "add a bag to my flight on the 24th", "Can you change the black one to stainless steel?", "get rid of it, please", "push that back a week"} {
		if !m.NeedsContext(inception.Input{Domain: "airline", Tools: inceptiontest.DomainTools(t, "airline"), Dialogue: inceptiontest.Dialogue(turn)}) {
			t.Errorf("%q: NeedsContext false, but its decision reads the agent's words", turn)
		}
	}
}
