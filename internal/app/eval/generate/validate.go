package generate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
)

// Reasons an opening is rejected (the ones without details; the others
// are formatted with what was found).
const (
	ReasonEmptyAnswer      = "empty answer"
	ReasonNoEvidence       = "no evidence: the answer quotes nothing of the error turn"
	ReasonNoReferringWord  = "anaphora: the evidence holds no referring word (it, that, those, the other one …)"
	ReasonOneCandidate     = "anaphora: the user's records hold fewer than two reservations or items, so the reference is not ambiguous"
	ReasonTwoReadings      = "multiple_interpretation: the answer gives fewer than two distinct readings"
	ReasonTwoStatements    = "contradiction: the evidence needs two distinct statements of the error turn that conflict"
	ReasonOutOfReach       = "unsupported request: the answer does not say what is out of reach (readings is empty)"
	ReasonNoDoubleCheck    = "double_check follow-up does not ask the agent to check again"
	ReasonLazyAsksCheck    = "lazy_feedback follow-up asks for a check (that is the double_check style)"
	ReasonMishandlingEmpty = "mishandling is empty"
)

// MaxUtterance bounds the error turn and the mishandling reply in
// characters (the follow-up: half of it).
const MaxUtterance = 800

// referring matches the words an anaphoric reference is made of.
var referring = regexp.MustCompile(`(?i)\b(it|its|that|this|those|these|them|they|one|ones|other|same|there|former|latter)\b`)

// recovers matches agent wording that already recovers from an error:
// a recovery tool, a hand-over to a person, a refusal (the recovery of an
// unsupported request) or a clarifying question (the recovery of an
// ambiguous one).
var recovers = []struct {
	what string
	re   *regexp.Regexp
}{
	{"names a recovery tool", regexp.MustCompile(`(?i)\b(ambiguity[_ ]report|transfer[_ ]to[_ ]human[_ ]agents?)\b`)},
	{"hands the conversation to a person", regexp.MustCompile(`(?i)\b(transfer(ring|red)?|hand(ing)? (you|this|it) (over|off)|human|representative|supervisor|specialist|live agent|escalat\w*)\b`)},
	{"says the request cannot be done", regexp.MustCompile(`(?i)\b(can(no|')t|can not|unable|not able|not possible|impossible|isn't possible|not supported|don't (support|offer|handle)|do not (support|offer|handle)|outside (of )?(what|my|our))\b`)},
	{"asks which one is meant", regexp.MustCompile(`(?i)\b(which (one|of|reservation|order|flight|item|trip)|do you mean|did you mean|(could|can) you (clarify|specify|confirm which)|to clarify|please (clarify|specify)|which would you)\b`)},
}

// checkWords matches a request to check again.
var checkWords = regexp.MustCompile(`(?i)\b(check|double[- ]check|verify|look (again|at|into)|make sure|are you sure|confirm|review|re-?check)\b`)

// checker validates drafts for one domain.
type checker struct {
	domain   string
	tools    []string
	entities []*regexp.Regexp
}

func newChecker(domain string, tax *inception.Taxonomy, tools []llm.Tool) *checker {
	c := &checker{domain: domain, tools: tax.RecoveryToolNames()}
	for _, t := range tools {
		c.tools = append(c.tools, t.Name)
	}
	for _, e := range tax.Domains[domain].Entities {
		c.entities = append(c.entities, regexp.MustCompile(e.Pattern))
	}
	return c
}

// entityID returns the first token of text that has the shape of one of
// the domain's entity ids (a reservation or order id …), or "".
func (c *checker) entityID(text string) string {
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '#' || r == '_' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z')
	}) {
		for _, re := range c.entities {
			if re.MatchString(tok) {
				return tok
			}
		}
	}
	return ""
}

// Validate says why an opening cannot be used ("" when it can):
//
//   - every utterance is there;
//   - the error turn carries the error: the evidence is quoted from it
//     (case and spacing aside), names no tool and gives the agent no
//     orders (planted.EvidenceProblem, the bar a planted quote must
//     meet); and by type: anaphora has a referring word in the evidence,
//     names no entity id in the error turn and the user's records hold
//     at least two candidates; multiple_interpretation gives two distinct
//     readings; contradiction quotes two distinct statements; an
//     unsupported type says what is out of reach;
//   - the mishandling reply does not already recover (no recovery tool, no
//     hand-over to a person, no refusal, no clarifying question);
//   - the follow-up has its style (double_check asks for a check,
//     lazy_feedback does not) and names no entity id.
//
// candidates is how many reservations or items the user's records hold.
func (c *checker) Validate(errorType, style string, d Draft, candidates int) string {
	for _, f := range []struct {
		name, text string
		max        int
	}{{"error_turn", d.ErrorTurn, MaxUtterance}, {"mishandling", d.Mishandling, MaxUtterance}, {"follow_up", d.FollowUp, MaxUtterance / 2}} {
		if strings.TrimSpace(f.text) == "" {
			return f.name + " is empty"
		}
		if n := utf8.RuneCountInString(f.text); n > f.max {
			return fmt.Sprintf("%s is %d characters long (at most %d: an opening is a few sentences)", f.name, n, f.max)
		}
	}
	if r := c.errorTurn(errorType, d, candidates); r != "" {
		return r
	}
	if r := Recovers(d.Mishandling); r != "" {
		return "mishandling already recovers: it " + r
	}
	return c.followUp(style, d.FollowUp)
}

func (c *checker) errorTurn(errorType string, d Draft, candidates int) string {
	var quotes []string
	for _, q := range d.Evidence {
		if q = strings.TrimSpace(q); q == "" {
			continue
		}
		if !grounded(q, d.ErrorTurn) {
			return fmt.Sprintf("evidence %q is not in the error turn", clip(q, 80))
		}
		if p := planted.EvidenceProblem(q, c.tools); p != "" {
			return fmt.Sprintf("evidence %q: %s", clip(q, 80), p)
		}
		quotes = append(quotes, q)
	}
	if len(quotes) == 0 {
		return ReasonNoEvidence
	}
	switch errorType {
	case eval.TypeAnaphora:
		if !slices.ContainsFunc(quotes, referring.MatchString) {
			return ReasonNoReferringWord
		}
		if id := c.entityID(d.ErrorTurn); id != "" {
			return fmt.Sprintf("anaphora: the error turn names %s, the thing its reference should leave open", id)
		}
		if candidates < 2 {
			return ReasonOneCandidate
		}
	case eval.TypeMultipleInterpretation:
		if distinct(d.Readings) < 2 {
			return ReasonTwoReadings
		}
	case eval.TypeContradiction:
		if distinct(quotes) < 2 || nested(quotes) {
			return ReasonTwoStatements
		}
	default: // the unsupported types
		if distinct(d.Readings) < 1 {
			return ReasonOutOfReach
		}
	}
	return ""
}

func (c *checker) followUp(style, text string) string {
	asks := checkWords.MatchString(text)
	switch {
	case style == eval.StyleDoubleCheck && !asks:
		return ReasonNoDoubleCheck
	case style == eval.StyleLazyFeedback && asks:
		return ReasonLazyAsksCheck
	}
	if id := c.entityID(text); id != "" {
		return fmt.Sprintf("follow_up names %s: it would settle the error for the agent", id)
	}
	if r := Recovers(text); strings.HasPrefix(r, "names") {
		return "follow_up " + r
	}
	return ""
}

// Recovers says how an agent reply already recovers from a user error
// ("names a recovery tool", "asks which one is meant" …), or "" when it
// does not.
func Recovers(reply string) string {
	for _, r := range recovers {
		if r.re.MatchString(reply) {
			return r.what
		}
	}
	return ""
}

// grounded reports whether quote appears in text, ignoring case, spacing
// and the quote's outer punctuation.
func grounded(quote, text string) bool {
	q := strings.ToLower(oneLine(strings.Trim(quote, `'"“”‘’ .,!?…`)))
	return q != "" && strings.Contains(strings.ToLower(oneLine(text)), q)
}

// distinct counts the different non-empty entries, case and spacing aside.
func distinct(list []string) int {
	seen := map[string]bool{}
	for _, s := range list {
		if k := strings.ToLower(oneLine(s)); k != "" {
			seen[k] = true
		}
	}
	return len(seen)
}

// nested reports whether one quote contains another (two "statements"
// that are one).
func nested(quotes []string) bool {
	for i, a := range quotes {
		for j, b := range quotes {
			if i != j && strings.Contains(strings.ToLower(a), strings.ToLower(b)) {
				return true
			}
		}
	}
	return false
}
