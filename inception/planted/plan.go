package planted

import (
	"cmp"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reinception/rein/inception"
)

// Plan modes of the llm module.
const (
	// PlanTemplate plants the taxonomy's recovery plan with the evidence
	// quote as its only slot (default).
	PlanTemplate = "template"
	// PlanGenerated plants the model's own reasoning after validation.
	PlanGenerated = "generated"
)

// Limits of planted text.
const (
	MaxEvidenceRunes         = 160
	DefaultMaxReasoningRunes = 800
)

// SanitizeEvidence makes a user quote safe for the evidence slot: the text
// is cleaned (CleanText: NFKC, invisible characters removed), control
// characters and line breaks become spaces, runs of spaces collapse, double
// quotes become single quotes, backslashes, braces and angle brackets are
// dropped, and the result is capped at MaxEvidenceRunes (an ellipsis marks a
// cut).
func SanitizeEvidence(s string) string { return sanitize(s, MaxEvidenceRunes) }

// SanitizeUncapped applies SanitizeEvidence's character rules
// without the length cap.
func SanitizeUncapped(s string) string { return sanitize(s, -1) }

func sanitize(s string, maxRunes int) string {
	s = CleanText(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	n := 0
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			continue
		case unicode.IsSpace(r) || unicode.IsControl(r):
			if !space && b.Len() > 0 {
				if maxRunes >= 0 && n >= maxRunes {
					return strings.TrimSpace(b.String()) + "…"
				}
				b.WriteByte(' ')
				space = true
				n++
			}
			continue
		case r == '"' || r == '“' || r == '”' || r == '`':
			r = '\''
		case r == '\\' || r == '{' || r == '}' || r == '<' || r == '>':
			continue
		}
		if maxRunes >= 0 && n >= maxRunes {
			return strings.TrimSpace(b.String()) + "…"
		}
		b.WriteRune(r)
		space = false
		n++
	}
	return strings.TrimSpace(b.String())
}

// RenderPlan fills a recovery plan's evidence slot with the sanitised
// evidence. Without evidence the quoted slot reads "(see the user's latest
// message)".
// Whitespace of the plan is normalised to single spaces.
func RenderPlan(plan, evidence string) string {
	ev := SanitizeEvidence(evidence)
	out := plan
	if ev == "" {
		out = strings.ReplaceAll(out, `"`+inception.EvidenceSlot+`"`, inception.EvidenceSlot)
		ev = "(see the user's latest message)"
	}
	out = strings.ReplaceAll(out, inception.EvidenceSlot, ev)
	return strings.Join(strings.Fields(out), " ")
}

// GeneratedCheck validates a model-written plan in PlanGenerated mode: not
// empty, at most maxRunes, names the recovery tool as written, names no
// other tool (agent tools or other recovery tools) in any look-alike form
// (NamesTool), holds no markup that could pose as a tool call, repeats no
// claim of authority or approval (ClaimsAuthority), and states no amount
// or identifier the dialogue does not hold (a model told by a crafted
// message to "refund $5,000" cannot plant it). It returns the cleaned text
// (CleanText, control characters as spaces, runs of spaces collapsed) and
// "" or the reason it was refused.
func GeneratedCheck(reasoning, recoveryTool string, otherTools []string, maxRunes int, dialogue string) (string, string) {
	text := strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, CleanText(reasoning))), " ")
	switch {
	case text == "":
		return "", "generated plan is empty"
	case utf8.RuneCountInString(text) > maxRunes:
		return "", "generated plan is longer than the limit"
	case !ContainsWord(text, recoveryTool):
		return "", "generated plan does not name the recovery tool " + recoveryTool
	case strings.ContainsAny(text, "<>{}`"):
		return "", "generated plan contains markup"
	}
	others := make([]string, 0, len(otherTools))
	for _, t := range otherTools {
		if t != recoveryTool && t != "think" {
			others = append(others, t)
		}
	}
	// The plan as the model wrote it is checked too (NFKC hides some
	// look-alikes: see GroundEvidence).
	if t := cmp.Or(NamesTool(text, others), NamesTool(reasoning, others)); t != "" {
		return "", "generated plan names another tool " + t
	}
	if ClaimsAuthority(text) {
		return "", "generated plan repeats a claim of authority or approval"
	}
	lower := strings.ToLower(dialogue)
	for _, tok := range groundedToken.FindAllString(text, -1) {
		if !strings.Contains(lower, strings.ToLower(strings.TrimRight(tok, ".,"))) {
			return "", "generated plan states " + tok + ", which the dialogue does not hold"
		}
	}
	return text, ""
}

// groundedToken matches what a plan may only repeat from the dialogue:
// amounts and numbers of two digits or more ($5,000, 120.50, 2024) and
// identifiers mixing letters and digits (4WQ150, sara_doe_496).
var groundedToken = regexp.MustCompile(`[$€£]\s?\d[\d,.]*|\b\d[\d,.]*\d\b|\b[A-Za-z_]*\d[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*\b|\b[A-Za-z_]+[A-Za-z0-9_]*\d[A-Za-z0-9_]*\b`)

var wordChar = regexp.MustCompile(`[A-Za-z0-9_]`)

// ContainsWord reports whether name occurs in s not glued to other
// identifier characters.
func ContainsWord(s, name string) bool {
	if name == "" {
		return false
	}
	ls, ln := strings.ToLower(s), strings.ToLower(name)
	for off := 0; ; {
		i := strings.Index(ls[off:], ln)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(ln)
		before := i == 0 || !wordChar.MatchString(ls[i-1:i])
		after := end == len(ls) || !wordChar.MatchString(ls[end:end+1])
		if before && after {
			return true
		}
		off = i + 1
	}
}
