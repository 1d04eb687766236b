package rules

import (
	"strings"

	"github.com/reinception/rein/inception"
)

// Structural signals: what the turn's shape says (two ranking criteria,
// an exclusion taken back, a chain of legs, a phrasal reference, opposite
// actions on one object), not its exact words; found on dev3, a second
// author's wording.

// criterionFamily maps a ranking word to the criterion it ranks by. Two
// families in one turn ("the earliest unless the cheaper one is better
// with bags", "the better one but not too expensive") pick different
// options; one family alone ("whichever is cheaper") is settled by the
// facts.
var criterionFamily = map[string]string{
	// "later"/"earlier" alone move a date ("a day later"): no ranking.
	"earliest": "time", "latest": "time", "soonest": "time",
	"cheapest": "price", "cheaper": "price", "cheap": "price", "expensive": "price", "pricier": "price", "affordable": "price",
	"best": "quality", "better": "quality", "nicer": "quality", "nicest": "quality",
	"fastest": "speed", "faster": "speed", "quickest": "speed", "quicker": "speed", "shortest": "speed", "shorter": "speed",
}

// shiftWords move a date or time ("a day later") and rank only as one
// side of an alternative ("an earlier flight or a cheaper one").
var shiftWords = map[string]bool{"earlier": true, "later": true, "sooner": true}

func hasSuffixAny(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// twoCriteria returns the second ranking word of another criterion than
// the first, or nil.
func twoCriteria(lower string) []int {
	first, firstAt, shifted := "", 0, false
	var loc []int
	forEachWord(lower, func(start, end int) {
		if loc != nil {
			return
		}
		w := lower[start:end]
		f, shift := criterionFamily[w], false
		if f == "" && shiftWords[w] {
			f, shift = "time", true
		}
		switch {
		case f == "":
		case first == "":
			first, firstAt, shifted = f, start, shift
		case f != first:
			// A shift word ranks only in "X or Y" within one sentence.
			between := lower[firstAt:end]
			if (shift || shifted) && (!strings.Contains(between, " or ") || strings.ContainsAny(between, ".?!;")) {
				if !shift {
					first, firstAt, shifted = f, start, false
				}
				return
			}
			loc = []int{start, end}
		}
	})
	return loc
}

// exceptAlso finds an item excluded and then included in one turn
// ("everything except the puzzle, and also the puzzle"): the content word
// after "except" appears again after it.
func exceptAlso(lower string) []int {
	i := inception.WordIndex(lower, "except")
	if i < 0 {
		return nil
	}
	var ws []string
	var at []int
	forEachWord(lower[i:], func(start, end int) {
		ws = append(ws, lower[i+start:i+end])
		at = append(at, i+start)
	})
	for k := 1; k < len(ws) && k < 4; k++ {
		w := ws[k]
		if determiner[w] || functionWord[w] || w == "for" || len(w) < 3 {
			continue
		}
		for j := k + 1; j < len(ws); j++ {
			if ws[j] == w {
				return []int{i, at[j] + len(w)}
			}
		}
		return nil
	}
	return nil
}

// arrowChain finds three or more legs written as arrows ("Boston ->
// Chicago -> Denver -> Boston"): a chain the trip types (one way, round
// trip) cannot hold, whatever the places are called.
func arrowChain(cr *catalogRules, text string) []int {
	if len(cr.tripTypes) == 0 || strings.Contains(strings.Join(cr.tripTypes, " "), "multi") {
		return nil
	}
	n, first, last := 0, -1, -1
	for i := 0; i < len(text); i++ {
		l := 0
		switch {
		case strings.HasPrefix(text[i:], "->"):
			l = 2
		case strings.HasPrefix(text[i:], "→"):
			l = len("→")
		}
		if l > 0 {
			n++
			if first < 0 {
				first = i
			}
			last = i + l
			i += l - 1
		}
	}
	if n < 3 {
		return nil
	}
	return []int{first, last}
}

// quantityOf are words before "of it/them" that make a share, not an
// action ("some of them", "the cost of it").
var quantityOf = map[string]bool{"some": true, "all": true, "any": true, "none": true, "one": true, "both": true, "each": true,
	"most": true, "many": true, "few": true, "part": true, "rest": true, "cost": true, "total": true, "price": true, "out": true, "because": true, "instead": true}

// clauseEndRefs finds "it"/"them" as the object of a phrasal action
// ending in "of" ("get rid of it,", "dispose of them."), which refVerb's
// single verbs miss: whether it is ambiguous is then a matter of the
// candidates in play, as for any reference. "of" keeps the idioms out
// ("got it", "I appreciate it", "keep it in economy").
func clauseEndRefs(lower string) [][]int {
	if !strings.Contains(lower, " of ") {
		return particleRefs(lower)
	}
	var ws [][2]int
	forEachWord(lower, func(start, end int) { ws = append(ws, [2]int{start, end}) })
	var out [][]int
	for i := 2; i < len(ws); i++ {
		w := lower[ws[i][0]:ws[i][1]]
		// "one of them": a single entity the set does not pick.
		if (w == "them" || w == "those" || w == "these") && lower[ws[i-1][0]:ws[i-1][1]] == "of" && lower[ws[i-2][0]:ws[i-2][1]] == "one" {
			out = append(out, []int{ws[i-2][0], ws[i][1]})
			continue
		}
		if w != "it" && w != "them" || lower[ws[i-1][0]:ws[i-1][1]] != "of" || quantityOf[lower[ws[i-2][0]:ws[i-2][1]]] {
			continue
		}
		if !endsReference(lower[ws[i][1]:]) {
			continue
		}
		out = append(out, []int{ws[i][0], ws[i][1]})
	}
	return append(out, particleRefs(lower)...)
}

// notObjectBefore are words before a pronoun that make it no entity
// reference ("I think it", "if it", "what that").
var notObjectBefore = map[string]bool{"is": true, "was": true, "think": true, "guess": true, "hope": true, "know": true, "mean": true, "if": true, "that": true, "what": true, "whether": true, "believe": true, "as": true, "figure": true, "sort": true, "find": true, "look": true, "check": true, "give": true, "hold": true, "back": true}

// particles turn a verb into a phrasal action on the pronoun before them
// ("push that back", "move it up").
var particles = map[string]bool{"back": true, "up": true, "forward": true, "off": true, "over": true, "out": true}

// particleRefs finds "it"/"that"/"them" between a verb and a particle
// ("push that back a week"): the entity acted on, whatever the verb.
func particleRefs(lower string) [][]int {
	if !hasAny(lower, " back", " up", " forward", " off", " over", " out") {
		return nil
	}
	var ws [][2]int
	forEachWord(lower, func(start, end int) { ws = append(ws, [2]int{start, end}) })
	var out [][]int
	for i := 1; i+1 < len(ws); i++ {
		w, prev, next := lower[ws[i][0]:ws[i][1]], lower[ws[i-1][0]:ws[i-1][1]], lower[ws[i+1][0]:ws[i+1][1]]
		if (w == "it" || w == "that" || w == "them") && particles[next] && !notObjectBefore[prev] && !refVerbs[prev] && !determiner[prev] {
			out = append(out, []int{ws[i][0], ws[i][1]})
		}
	}
	return out
}

// partition reports a cancel and a keep that split a set: each names its
// own entity by a "the X one" property ("cancel the Chicago one and the
// San Francisco one, keep Boston"), and the kept one is not among the
// cancelled. Only a shared object ("cancel it but keep it") conflicts.
func partition(span string) bool {
	span = sentenceAround(span, 0, 0)
	k := inception.WordIndex(span, "keep")
	if k < 0 {
		return false
	}
	cancelPart, keepPart := span[:k], span[k+len("keep"):]
	if !strings.Contains(cancelPart, " one") || !propertyBefore(cancelPart) {
		return false
	}
	// The first word kept, past a determiner: a pronoun ("keep it")
	// points back at what is cancelled.
	kept := ""
	forEachWord(keepPart, func(start, end int) {
		if w := keepPart[start:end]; kept == "" && !determiner[w] {
			kept = w
		}
	})
	return kept != "" && !refPronoun[kept] && !functionWord[kept] && kept != "one" && inception.WordIndex(cancelPart, kept) < 0
}

// sharedAfter reports a descriptor ("on the 24th") that two or more listed
// entities share and none alone has: the words narrow the set but do not
// pick one. Words no entity mentions say nothing either way.
func sharedAfter(c candidates, rest string) bool {
	if len(c.spans) < 2 {
		return false
	}
	words := strings.Fields(rest)
	if len(words) > 5 {
		words = words[:5]
	}
	shared := false
	for _, w := range words {
		w = strings.Trim(w, ",.!?;:()")
		if len(w) < 3 || functionWord[w] || determiner[w] {
			continue
		}
		switch c.matching(w) {
		case 1:
			return false
		case 0:
		default:
			shared = true
		}
	}
	return shared
}

// theOneShared finds "the one(s)" followed by a descriptor that several
// listed entities share ("cancel the one on the 24th" with two on the
// 24th).
func theOneShared(lower string, c candidates) []int {
	for _, loc := range theOneDescribed(lower) {
		if sharedAfter(c, lower[loc[1]:]) {
			return loc
		}
	}
	return nil
}

// theOneDescribed returns each "the one(s)" followed by a descriptor.
func theOneDescribed(lower string) [][]int {
	var out [][]int
	for off := 0; ; {
		i := strings.Index(lower[off:], "the one")
		if i < 0 {
			return out
		}
		i += off
		end := i + len("the one")
		if end < len(lower) && lower[end] == 's' {
			end++
		}
		off = end
		if end < len(lower) && isASCIIWord(lower[end]) || i > 0 && isASCIIWord(lower[i-1]) {
			continue
		}
		if descriptorAfter.MatchString(lower[end:]) {
			out = append(out, []int{i, end})
		}
	}
}

// opposites are pairs of actions that undo each other: both asked for in
// one turn, with no correction between, conflict ("upgrade 4WQ150 to
// business and also downgrade it to economy").
var opposites = [][2]string{{"upgrade", "downgrade"}, {"add", "remove"}, {"increase", "decrease"}}

// oppositeActions returns the span from the first action to its opposite.
func oppositeActions(lower string) []int {
	for _, p := range opposites {
		i, j := inception.WordIndex(lower, p[0]), inception.WordIndex(lower, p[1])
		if i < 0 || j < 0 {
			continue
		}
		a, b := min(i, j), max(i, j)
		if correction.MatchString(lower[a:b]) || negatedBefore(lower, a) || negatedBefore(lower, b) || hasAny(lower[a:b], " or ", " if ") {
			continue
		}
		return []int{a, b + len(p[1])}
	}
	return nil
}

// countedOthers: a party of several stated by number or by who comes
// along ("2 passengers", "with my two kids").
var countedOthers = mustFast(`\b(?:(?:2|3|4|5|two|three|four|five) (?:passengers|people|adults|travell?ers|tickets|of us)|with my (?:(?:two|three|2|3) )?(?:` + relatives + `))\b`)

// soloAndCounted finds travelling alone and a party of several in one turn,
// in either order, with no correction between ("book it for 2 passengers,
// just me"; "I'm flying alone with my two kids").
func soloAndCounted(lower string) []int {
	solo := justMe.FindStringIndex(lower)
	if solo == nil {
		return nil
	}
	other := countedOthers.FindStringIndex(lower)
	if other == nil {
		return nil
	}
	a, b := min(solo[0], other[0]), max(solo[1], other[1])
	if correction.MatchString(lower[a:b]) {
		return nil
	}
	return []int{a, b}
}

// selfNegated finds a thing asked for in one sentence and refused in
// another of the same turn ("Add insurance to my booking. I don't want
// insurance."), a correction anywhere excepted: that is the allowed
// "add insurance… actually no".
func selfNegated(lower string) []int {
	if !hasAny(lower, "n't", "not", "no ") || correction.MatchString(lower) {
		return nil
	}
	for _, m := range earlierNegated.FindAllStringSubmatchIndex(lower, -1) {
		term := earlierTerm(lower[m[2]:m[3]])
		if term == "" {
			continue
		}
		neg := sentenceAround(lower, m[0], m[1])
		for off := 0; ; {
			i := inception.WordIndex(lower[off:], term)
			if i < 0 {
				break
			}
			i += off
			off = i + len(term)
			if i >= m[0] && i < m[1] || negatedBefore(lower, i) || sentenceAround(lower, i, i+len(term)) == neg {
				continue
			}
			return []int{min(i, m[0]), max(off, m[1])}
		}
	}
	return nil
}

// oneWayThenReturn: one way stated (in this turn or an earlier user turn),
// then a return leg asked for, where the trip type is one value.
var (
	oneWay      = mustFast(`\bone[- ]way\b`)
	returnAsked = mustFast(`\b(?:round[- ]trip|return (?:flight|trip|ticket|leg)|(?:book|add) (?:the|a|my) return|coming back on|fly(?:ing)? back on)\b`)
)

func oneWayThenReturn(in inception.Input, lower string) []int {
	ret := returnAsked.FindStringIndex(lower)
	if ret == nil || negatedBefore(lower, ret[0]) || correction.MatchString(lower) {
		return nil
	}
	if loc := oneWay.FindStringIndex(lower); loc != nil && loc[0] < ret[0] && !negatedBefore(lower, loc[0]) {
		return []int{loc[0], ret[1]}
	}
	for _, u := range in.Dialogue[:len(in.Dialogue)-1] {
		if u.Role == inception.RoleUser {
			prev := strings.ToLower(u.Text)
			if loc := oneWay.FindStringIndex(prev); loc != nil && !negatedBefore(prev, loc[0]) && !correction.MatchString(prev) {
				return ret
			}
		}
	}
	return nil
}

// describedEntity reports a bare entity noun followed by a descriptor ("my
// flight on the 24th"), which multipleInterpretation checks against the
// listed entities.
func describedEntity(lower string) bool {
	for _, np := range bareNouns(lower) {
		if entityNoun[np.noun] != "" && descriptorAfter.MatchString(lower[np.end:]) {
			return true
		}
	}
	return false
}
