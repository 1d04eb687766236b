package rules

import (
	"strings"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
)

// gateSignals are the rules' structural signals the classifier reads, each
// a named pattern the gate's or the precise checks use on the user turn:
// conflict and correction markers, alternatives and open choices,
// references and third persons, values and clock hours. The classifier
// weighs them with the words instead of taking each as a verdict.
var gateSignals = []struct {
	name string
	re   *fastRE
}{
	{"correction", correction},
	{"consent_start", consentStart},
	{"confirm_start", confirmStart},
	{"denial", denial},
	{"claim_ref", claimRef},
	{"negated_verb", negatedVerb},
	{"keep_vs", keepVs},
	{"both_and_one", bothAndOne},
	{"concessive", gateConcessive},
	{"verb_or_verb", verbOrVerb},
	{"open_choice", openChoice},
	{"alternative", gateAlternative},
	{"or", gateOr},
	{"handed_over", gateHandedOver},
	{"comparative", comparativeChoice},
	{"clock", clockTime},
	{"clock_loose", gateClock},
	{"day_part", dayPart},
	{"upgrade", gateUpgrade},
	{"cabin", cabinWord},
	{"described", gateDescribed},
	{"pronoun_ref", pronounRef},
	{"possessive", possessiveRef},
	{"the_x_one", theXOne},
	{"ref", gateRef},
	{"end_ref", gateEndRef},
	{"other_person", gateOther},
	{"relative_one", gateRelativeOne},
	{"unwanted", gateUnwanted},
	{"vague", gateVague},
	{"value", gateValue},
	{"value_one", gateValueOne},
	{"then_leg", gateThen},
	{"action_verb", actionVerb},
	{"number", number},
	{"quantity", quantity},
	{"closing", closing},
}

// gateFeatures returns the features of the judged user turn: its words
// and word pairs (digits folded into shapes, so an id or a date is a kind
// of token, not a value), the structural signals it holds, whether it
// names an id of the domain, its length and whether the user spoke
// before. It reads the user's turns only.
func (m *Module) gateFeatures(dr *domainRules, in inception.Input, lower string) []learned.Feature {
	text := in.Dialogue[len(in.Dialogue)-1].Text
	seen := map[string]bool{}
	var out []learned.Feature
	add := func(name string, span []int) {
		if !seen[name] {
			seen[name] = true
			out = append(out, learned.Feature{Name: name, Span: span, Val: 1})
		}
	}
	prev, prevStart := "^", 0
	n := 0
	gateTokens(lower, func(tok string, start, end int) {
		n++
		add("w:"+tok, []int{start, end})
		add("b:"+prev+" "+tok, []int{prevStart, end})
		prev, prevStart = tok, start
	})
	if n > 0 {
		add("b:"+prev+" $", nil)
	}
	for _, s := range gateSignals {
		if loc := s.re.FindStringIndex(lower); loc != nil {
			add("s:"+s.name, loc)
		}
	}
	if idInTurn(dr, text) {
		add("s:names_id", nil)
	}
	switch {
	case n <= 6:
		add("len:short", nil)
	case n <= 20:
		add("len:medium", nil)
	default:
		add("len:long", nil)
	}
	for _, u := range in.Dialogue[:len(in.Dialogue)-1] {
		if u.Role == inception.RoleUser {
			add("ctx:user_before", nil)
			break
		}
	}
	if strings.Contains(lower, "?") {
		add("s:question", nil)
	}
	return out
}

// gateTokens calls fn with each word of lower (letters and apostrophes)
// and each token holding a digit, folded to its shape: "#id" for an
// id-like mix of letters and digits, "#n" for a one- or two-digit number,
// "#num" for a longer one, "#n" and its letters for a number with a unit
// or suffix ("#npm", "#ngb").
func gateTokens(lower string, fn func(tok string, start, end int)) {
	start := -1
	digit := false
	for i := 0; i <= len(lower); i++ {
		if i < len(lower) {
			c := lower[i]
			if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '\'' && start >= 0 {
				if start < 0 {
					start, digit = i, false
				}
				digit = digit || c >= '0' && c <= '9'
				continue
			}
		}
		if start < 0 {
			continue
		}
		tok := strings.TrimRight(lower[start:i], "'")
		if digit {
			tok = digitShape(tok)
		}
		if tok != "" {
			fn(tok, start, i)
		}
		start = -1
	}
}

func digitShape(tok string) string {
	i := 0
	for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
		i++
	}
	rest := tok[i:]
	switch {
	case rest == "" && len(tok) <= 2:
		return "#n"
	case rest == "":
		return "#num"
	case i > 0 && !hasDigit(rest):
		return "#n" + rest // 5th, 2pm, 64gb
	default:
		return "#id"
	}
}
