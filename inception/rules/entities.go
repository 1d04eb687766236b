package rules

import (
	"regexp"
	"strings"
)

// Candidate entities: what a reference in the user turn could point at.
// The rules module counts them in the agent's last words, however they were
// put: ids in a sentence, a bulleted or numbered list, or the items of an
// order summarised from a tool result ("contains an action camera, a patio
// umbrella and a desk lamp").

// candidates are the entities the agent's last message put in play.
type candidates struct {
	ids   int      // largest number of distinct ids of one kind
	spans []string // lower-cased text of each listed entity (bullets or items)
}

// count is the number of entities in play.
func (c candidates) count() int {
	return max(c.ids, len(c.spans))
}

// matching returns how many listed entities mention every word of prop.
func (c candidates) matching(prop string) int {
	n := 0
	for _, s := range c.spans {
		if strings.Contains(s, prop) {
			n++
		}
	}
	return n
}

// bulletLine matches a line that is one element of a list.
var bulletLine = regexp.MustCompile(`(?m)^\s*(?:[-*•·]|\d{1,2}[.)])\s+\S.*$`)

// listIntro marks the start of an inline list of items or entities.
var listIntro = regexp.MustCompile(`\b(?:contains?|containing|has|have|with|were|are|is|see|found|includes?|including)\b:?\s+|:\s+`)

// parens matches a parenthesised aside, which holds an entity's details.
var parens = regexp.MustCompile(`\([^()]*\)`)

// idSpan matches an entity id and what follows it up to the next one.
var listSplit = regexp.MustCompile(`\s*(?:,\s*(?:and|or)\s+|,\s*|\s+and\s+|\s+or\s+|;\s*)`)

// agentCandidates counts the entities the agent's last message lists.
func agentCandidates(dr *domainRules, text, kind string) candidates {
	return agentCandidatesOf(dr, newAgentFacts(text), text, kind)
}

// agentCandidatesOf is agentCandidates with the message's facts (f, of
// text), whose lists every kind shares.
func agentCandidatesOf(dr *domainRules, f *agentFacts, text, kind string) candidates {
	var c candidates
	if dr != nil {
		c.ids = entityCount(dr, text, kind)
	}
	lower := f.lower
	// "two upcoming trips", "3 orders": the agent counts them.
	c.ids = max(c.ids, statedCount(lower, kind))
	// "I found one reservation: NA6PZ3, Detroit round trip, …, 2
	// passengers": the agent's own count of one settles it, whatever the
	// comma list after it looks like.
	if c.ids < 2 && statedOne(lower, kind) {
		c.ids, c.spans = 1, nil
		return c
	}
	if lines := f.bullets(); len(lines) >= 2 {
		c.spans = lines
		return c
	}
	// Spans between id mentions: "ABC123 (Boston to Denver) and XYZ789
	// (...)" lists two entities with their details.
	if dr != nil && c.ids >= 2 {
		c.spans = idSpans(dr, text, kind)
		return c
	}
	if best := f.inlineList(); len(best) >= 2 {
		c.spans = best
	}
	return c
}

// inlineList is the longest comma/and list after an intro word, with
// parenthesised details kept with their element, else a list without an
// intro word; nil for none of two or more.
func inlineList(lower string) []string {
	best := []string(nil)
	for _, sentence := range splitSentences(lower) {
		for _, loc := range listIntro.FindAllStringIndex(sentence, -1) {
			spans := listParts(sentence[loc[1]:])
			if len(spans) > len(best) && (determined(spans) >= 2 || detailed(spans) >= 2) {
				best = spans
			}
		}
	}
	if len(best) < 2 {
		best = bareList(lower)
	}
	if len(best) < 2 {
		return nil
	}
	return best[:len(best):len(best)]
}

// listParts splits text at commas, "and" and "or", keeping each
// parenthesised detail with its element; nil when there are fewer than two
// parts.
func listParts(rest string) []string {
	details := parens.FindAllString(rest, -1)
	flat := parens.ReplaceAllString(rest, "\x00")
	parts := listSplit.Split(flat, -1)
	if len(parts) < 2 {
		return nil
	}
	k := 0
	var spans []string
	for _, p := range parts {
		for strings.Contains(p, "\x00") && k < len(details) {
			p = strings.Replace(p, "\x00", details[k], 1)
			k++
		}
		if p = strings.TrimSpace(p); p != "" {
			spans = append(spans, p)
		}
	}
	return spans
}

// bareList finds a list without an intro word ("Your Wireless Earbuds and
// the Vacuum Cleaner … can be exchanged", "… and holds a Water Bottle
// (750ml, red), a Bookshelf (…)"): a sentence whose comma/and parts
// are all noun phrases or carry their details in parentheses, two at
// least.
func bareList(lower string) []string {
	var best []string
	for _, sentence := range splitSentences(lower) {
		spans := listParts(sentence)
		for _, p := range spans {
			if !entityStart.MatchString(p) && !strings.HasSuffix(p, ")") {
				spans = nil // a clause, not a list element
				break
			}
		}
		if len(spans) > len(best) {
			best = spans
		}
	}
	return best
}

// determined counts the spans that open like a noun phrase ("an action
// camera", "the 20MP one", "two kettles"): a list of entities rather than
// the clauses of a sentence ("cancel 5HVW7S, reason change of plans").
func determined(spans []string) int {
	n := 0
	for _, s := range spans {
		if entityStart.MatchString(s) {
			n++
		}
	}
	return n
}

// detailed counts the spans that end with a parenthesised detail
// ("Action Camera (4K, black)").
func detailed(spans []string) int {
	n := 0
	for _, s := range spans {
		if strings.HasSuffix(s, ")") {
			n++
		}
	}
	return n
}

var entityStart = regexp.MustCompile(`^(?:a|an|the|another|one|two|three|four|my|your|\d+)\b`)

// splitSentences splits on sentence ends that are not inside parentheses.
func splitSentences(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case '.', '?', '!', '\n':
			if depth == 0 && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n') {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// idSpans cuts text at each entity id into one span per id.
func idSpans(dr *domainRules, text, kind string) []string {
	lower := strings.ToLower(text)
	var starts []int
	forEachToken(text, func(start, end int) {
		tok := strings.TrimPrefix(text[start:end], "#")
		if !idShaped(tok) {
			return
		}
		k := -1
		for i, re := range dr.entities {
			if re.MatchString(tok) {
				k = i
			}
		}
		if k >= 0 && (kind == "" || strings.HasPrefix(dr.entityNames[k], kind)) {
			starts = append(starts, start)
		}
	})
	spans := make([]string, 0, len(starts))
	for i, s := range starts {
		end := len(lower)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		spans = append(spans, lower[s:end])
	}
	return spans
}

// idShaped reports a token that can be an id: with a digit, or five or
// more capitals ("QWPXBF").
func idShaped(tok string) bool {
	if len(tok) < 4 || len(tok) > 24 {
		return false
	}
	upper := true
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; {
		case c >= '0' && c <= '9':
			return true
		case c < 'A' || c > 'Z':
			upper = false
		}
	}
	return upper && len(tok) >= 5
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

// forEachToken calls fn with the bounds of every run of letters, digits
// and '#'.
func forEachToken(text string, fn func(start, end int)) {
	start := -1
	for i := 0; i <= len(text); i++ {
		if i < len(text) {
			c := text[i]
			if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '#' {
				if start < 0 {
					start = i
				}
				continue
			}
		}
		if start >= 0 {
			fn(start, i)
			start = -1
		}
	}
}

// entityCount returns the number of distinct ids in text of the given
// kind (an EntityNote name starting with it) or, for "", of the first kind
// in taxonomy order that text mentions: the entities at the top of what
// the agent is talking about (one reservation's several flight numbers are
// one reservation in play).
func entityCount(dr *domainRules, text, kind string) int {
	var ids [8][]string // per kind; small, no map allocation
	best := 0
	forEachToken(text, func(start, end int) {
		tok := strings.TrimPrefix(text[start:end], "#")
		if !idShaped(tok) {
			return
		}
		// A token fitting several patterns belongs to the last, the more
		// specific ("HAT123" is a flight number, not a reservation code).
		k := -1
		for i, re := range dr.entities {
			if i < len(ids) && re.MatchString(tok) {
				k = i
			}
		}
		if k < 0 {
			return
		}
		for _, seen := range ids[k] {
			if seen == tok {
				return
			}
		}
		ids[k] = append(ids[k], tok)
	})
	for k := range dr.entities {
		if k >= len(ids) {
			break
		}
		if kind != "" && strings.HasPrefix(dr.entityNames[k], kind) {
			return len(ids[k])
		}
		if kind == "" && len(ids[k]) > 0 && best == 0 {
			best = len(ids[k])
		}
	}
	return best
}

// statedCount returns the number the agent states of entities of the kind
// ("you have two upcoming trips", "2 pending orders"), or 0.
func statedCount(lower, kind string) int {
	if !hasAny(lower, "two ", "three ", "four ", "five ", "2 ", "3 ", "4 ", "5 ", "both ", "several ", "multiple ") {
		return 0
	}
	words := strings.FieldsFunc(lower, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	best := 0
	for i, w := range words {
		n := countWord[w]
		if n == 0 {
			continue
		}
		for j := i + 1; j <= i+3 && j < len(words); j++ {
			noun := strings.TrimSuffix(words[j], "s")
			if k := entityNoun[noun]; k != "" && noun != words[j] && (kind == "" || k == kind) {
				best = max(best, n)
				break
			}
		}
	}
	return best
}

var countWord = map[string]int{"two": 2, "three": 3, "four": 4, "five": 5, "2": 2, "3": 3, "4": 4, "5": 5, "both": 2, "several": 3, "multiple": 3}

// statedOne reports the agent counting a single entity of the kind ("one
// reservation", "a single order", "only one order").
func statedOne(lower, kind string) bool {
	if !hasAny(lower, "one ", "single ") {
		return false
	}
	words := strings.FieldsFunc(lower, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	for i := 0; i+1 < len(words); i++ {
		if words[i] != "one" && words[i] != "single" || i > 0 && (words[i-1] == "than" || words[i-1] == "which") {
			continue
		}
		if k := entityNoun[words[i+1]]; k != "" && (kind == "" || k == kind) {
			return true
		}
	}
	return false
}
