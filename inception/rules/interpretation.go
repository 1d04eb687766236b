package rules

import (
	"strings"

	"github.com/reinception/rein/inception"
)

// Multiple interpretation: the request reads several ways that lead to
// different actions. The signals: two action verbs joined by "or" (not a
// conditional fallback the facts settle), an open choice handed to the
// agent ("whichever", "whatever you think is best"), a vague comparative
// among listed options ("a darker one"), an upgrade with several cabins
// above (the tools' cabin enum), and a bare noun phrase that fits several
// entities the agent put in play ("use the certificate" when there are
// two).

// actionVerbs are the verbs of requests that change data.
const actionVerbs = `cancel|return|exchange|change|modify|refund|upgrade|downgrade|rebook|book|remove|add|keep|swap|replace|move|switch|take|put|pay|fix|send|use`

// verbOrVerb: two actions joined by "or", in one clause.
var verbOrVerb = mustFast(`\b(` + actionVerbs + `)\b[^.?!;]{0,60}?\bor (?:just |simply |maybe |even |at least |else )?(?:(?:you could |you can |could you |can you |i could |to )?)(` + actionVerbs + `|` + orVerbs + `)\b`)

// orVerbs are further verbs that name an action only as the second of an
// alternative ("cancel it or push it back", "change it or give my money
// back").
const orVerbs = `push|give|delay|postpone|get`

// orConditional: "…, or return it if it was delivered" — an alternative the
// facts settle.
var orConditional = mustFast(`^[^.?!;]{0,40}\bif\b`)

// openChoice hands the choice between actions or criteria to the agent.
var openChoice = mustFast(`\b(?:whichever(?: one)?(?: is| works| you| makes|'s)|whatever(?:'s| is)? (?:cheaper|easier|faster|better|best|works|makes sense|you think)|either (?:one|way|is|of them)(?: is| works)?(?: fine| ok| good)?|however you (?:think|see fit|want)|(?:do|sort it out|handle it|fix it) (?:however|whatever)|up to you|or at least|you (?:pick|choose|decide)|your call|(?:everything|anything|whatever) (?:else )?you need(?: to)?)\b`)

// singleCriterion: "whichever is cheapest" alone names one criterion, which
// the facts settle; it is ambiguous only next to another criterion or
// action.
var singleCriterion = mustFast(`^\s*(?:(?:the |one )?(?:cheap|cheapest|cheaper|earliest|latest|fastest|shortest)[^,.;]*|whichever (?:one )?is (?:cheapest|cheaper|earliest|fastest)[^,.;]*)[.!]?\s*$`)

// bareNounStop are nouns a bare phrase can name without picking an entity.
var bareNounStop = map[string]bool{
	"same": true, "whole": true, "rest": true, "price": true, "difference": true, "refund": true, "money": true,
	"total": true, "status": true, "policy": true, "way": true, "one": true, "first": true, "second": true, "last": true,
	"other": true, "cheapest": true, "new": true, "original": true, "current": true, "profile": true, "account": true,
	"fee": true, "change": true, "email": true, "name": true, "trip": true, "return": true, "outbound": true,
}

// multipleInterpretation reports the location of a request with several
// readings.
func multipleInterpretation(mm *memo, dr *domainRules, cr *catalogRules, in inception.Input, lower string) []int {
	for _, m := range findAllIf(strings.Contains(lower, " or "), verbOrVerb, lower) {
		v1, v2 := lower[m[2]:m[3]], lower[m[4]:m[5]]
		if v1 == v2 || orConditional.MatchString(lower[m[5]:]) || sameAction(v1, v2) {
			continue
		}
		return m[:2]
	}
	if loc := findIf(hasAny(lower, "whichever", "whatever", "either", "however", "up to you", "or at least", "you pick", "you choose", "you decide", "your call", "you need"), openChoice, lower); loc != nil {
		if !singleCriterion.MatchString(sentenceAround(lower, loc[0], loc[1])) && !negatedChoice(lower, loc[0]) {
			return loc
		}
	}
	if loc := openClock(lower); loc != nil {
		return loc
	}
	if loc := twoCriteria(lower); loc != nil {
		return loc
	}
	earlier := in.Dialogue[:len(in.Dialogue)-1]
	last := lastAgent(earlier)
	if last == "" {
		return nil
	}
	agent := strings.ToLower(last)
	// A relative property among listed options: "a darker one" when
	// black and blue are both darker than green.
	if loc := comparativeChoice.FindStringIndex(lower); loc != nil && listsOptions(agent) {
		return loc
	}
	// An upgrade with no target when the tools' cabin enum has more than
	// one value above the current one.
	if loc := bareUpgrade(cr, lower, agent); loc != nil {
		return loc
	}
	if idInTurn(dr, in.Dialogue[len(in.Dialogue)-1].Text) {
		return nil
	}
	several := severalNouns(agent)
	if strings.Contains(agent, "round trip") || strings.Contains(agent, "round-trip") {
		if several == nil {
			several = map[string]bool{}
		}
		several["flight"] = true // the outbound and the return
	}
	// "my flight on the 24th" when two listed entities are on the 24th.
	// (A bare "the flight" among several listed is left to the checks
	// below: agents' summaries keep listing what the talk has narrowed.)
	for _, np := range bareNouns(lower) {
		kind := entityNoun[strings.TrimSuffix(np.noun, "s")]
		if kind == "" || strings.HasSuffix(np.noun, "s") || !descriptorAfter.MatchString(lower[np.end:]) {
			continue
		}
		c := mm.candidates(dr, last, kind)
		if c.count() < 2 {
			c = mm.candidates(dr, last, "") // "my flight" among reservations
		}
		if sharedAfter(c, lower[np.end:]) {
			return []int{np.start, np.end}
		}
	}
	for _, np := range bareNouns(lower) {
		// "the passenger name" with two passengers: the compound's first
		// word is the owner several listed entities may be.
		owner := strings.Contains(np.noun, " ") && several[firstWord(np.noun)]
		if openNounPhrase(lower, np) && (several[np.noun] || owner || sharedModifier(agent, np.noun, several) || distinctlyModified(agent, np.noun) >= 2) {
			return []int{np.start, np.end}
		}
	}
	return nil
}

// openNounPhrase reports a bare noun phrase that may fit several entities,
// from the user turn alone: not a stop noun, not followed by a detail.
func openNounPhrase(lower string, np nounPhrase) bool {
	return !bareNounStop[np.noun] && len(np.noun) >= 4 && !followedByDetail(lower[np.end:])
}

// openNoun returns the first open bare noun phrase of the turn.
func openNoun(lower string) (nounPhrase, bool) {
	for _, np := range bareNouns(lower) {
		if openNounPhrase(lower, np) {
			return np, true
		}
	}
	return nounPhrase{}, false
}

// nounPhrase is a bare "the|my" noun phrase after an action verb or
// preposition; noun is one word or a two-word compound.
type nounPhrase struct {
	start, end int
	noun       string
}

// bareNouns finds "cancel the certificate", "to my address", "change the
// espresso machine" without a regexp (this runs on every turn).
func bareNouns(lower string) []nounPhrase {
	var out []nounPhrase
	for off := 0; off < len(lower); {
		i := strings.Index(lower[off:], " the ")
		j := strings.Index(lower[off:], " my ")
		k, det := i, 5
		if i < 0 || j >= 0 && j < i {
			k, det = j, 4
		}
		if k < 0 {
			break
		}
		k += off
		off = k + det
		ws := k
		for ws > 0 && isASCIIWord(lower[ws-1]) {
			ws--
		}
		if prev := lower[ws:k]; !bareNounHead[prev] {
			continue
		}
		w1s := k + det
		w1e := w1s
		for w1e < len(lower) && (lower[w1e] >= 'a' && lower[w1e] <= 'z' || lower[w1e] == '-' && w1e > w1s) {
			w1e++
		}
		if w1e == w1s {
			continue
		}
		np := nounPhrase{start: ws, end: w1e, noun: lower[w1s:w1e]}
		if w1e+1 < len(lower) && lower[w1e] == ' ' {
			w2e := w1e + 1
			for w2e < len(lower) && (lower[w2e] >= 'a' && lower[w2e] <= 'z' || lower[w2e] == '-' && w2e > w1e+1) {
				w2e++
			}
			if w2 := lower[w1e+1 : w2e]; w2 != "" && !functionWord[w2] && (w2e == len(lower) || !isASCIIWord(lower[w2e])) {
				np.end, np.noun = w2e, lower[w1s:w2e] // a compound: "espresso machine"
			}
		}
		out = append(out, np)
	}
	return out
}

// bareNounHead are the words a bare noun phrase follows.
var bareNounHead = func() map[string]bool {
	m := map[string]bool{"to": true, "on": true, "from": true}
	for _, v := range strings.Split(actionVerbs, "|") {
		m[v] = true
	}
	return m
}()

// functionWord ends a noun phrase.
var functionWord = map[string]bool{
	"to": true, "for": true, "and": true, "or": true, "but": true, "on": true, "in": true, "with": true, "from": true,
	"is": true, "was": true, "please": true, "pls": true, "too": true, "instead": true, "i": true, "if": true, "it": true,
	"as": true, "at": true, "by": true, "that": true, "which": true, "of": true, "now": true, "then": true, "again": true,
}

// comparativeChoice: a relative property standing for a choice ("a
// darker one", "same as now but quieter").
var comparativeChoice = mustFast(`\b(?:darker|lighter|brighter|quieter|louder|bigger|smaller|larger|softer|harder|thinner|thicker|warmer|cooler)(?: one| ones| version| model| color| colour)?\s*(?:please|pls)?[.!]*\s*$`)

// listsOptions reports an agent message that lists three or more short
// options in one sentence ("black, blue and red").
func listsOptions(agent string) bool {
	for _, s := range splitSentences(agent) {
		if strings.Count(s, ",")+strings.Count(s, " and ")+strings.Count(s, " or ") >= 2 {
			return true
		}
	}
	return false
}

// bareUpgrade finds "an upgrade" that names no cabin while the agent's
// message puts the reservation in the lowest cabin of the tools' enum, so
// two or more cabins are above it.
func bareUpgrade(cr *catalogRules, lower, agent string) []int {
	loc := bareUpgradeRE.FindStringIndex(lower)
	if cr == nil || len(cr.cabins) < 3 || loc == nil {
		return nil
	}
	for _, c := range cr.cabins {
		if strings.Contains(lower, strings.ReplaceAll(c, "_", " ")) {
			return nil
		}
	}
	lowest := strings.ReplaceAll(cr.cabins[0], "_", " ")
	if strings.Contains(lower, "class") || strings.Contains(lower, "first") || !strings.Contains(agent, lowest) {
		return nil
	}
	// The agent already named a target: the upgrade is that one.
	rest := strings.ReplaceAll(agent, lowest, "")
	for _, c := range cr.cabins[1:] {
		if strings.Contains(rest, strings.ReplaceAll(c, "_", " ")) {
			return nil
		}
	}
	return loc
}

// bareUpgradeRE: an upgrade asked for, not one already agreed ("proceed
// with the upgrade").
var bareUpgradeRE = mustFast(`\b(?:an upgrade|upgrade (?:me|us|it|my (?:reservation|booking|flight|trip|ticket|seat)|[a-z0-9]{6})\b)`)

// sameAction pairs verbs that name one action ("change or swap").
func sameAction(a, b string) bool {
	group := map[string]int{"change": 1, "modify": 1, "switch": 1, "swap": 1, "replace": 1, "exchange": 1, "move": 1, "rebook": 1,
		"push": 1, "delay": 1, "postpone": 1,
		"cancel": 2, "remove": 2, "return": 3, "refund": 3, "give": 3, "add": 4, "put": 4, "book": 5, "take": 5, "get": 5, "pay": 6, "use": 6}
	return group[a] != 0 && group[a] == group[b]
}

// followedByDetail reports a noun phrase that goes on to pick an entity: an
// id, a number, an amount or a describing clause.
var detailAfter = mustFast(`^(?:\s*#?[a-z]*[0-9]|\s+(?:from|on|in|with|that|which|of|ending|number|id)\b|\s*\()`)

func followedByDetail(rest string) bool { return detailAfter.MatchString(rest) }

// severalNouns returns the nouns the agent counts as several ("two
// certificates", "2 passengers", "both espresso machines" → certificate,
// passenger, machine), singular.
func severalNouns(agent string) map[string]bool {
	var out map[string]bool
	words := strings.FieldsFunc(agent, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') })
	for i, w := range words {
		if !severalWord[w] && !(len(w) == 1 && w[0] >= '2' && w[0] <= '9') {
			continue
		}
		for j := i + 1; j <= i+2 && j < len(words); j++ {
			if n := words[j]; len(n) > 3 && strings.HasSuffix(n, "s") {
				if out == nil {
					out = map[string]bool{}
				}
				out[strings.TrimSuffix(n, "s")] = true
				out[strings.TrimSuffix(n, "es")] = true
				break
			}
		}
	}
	return out
}

var severalWord = map[string]bool{"two": true, "three": true, "four": true, "five": true, "several": true, "both": true, "multiple": true}

// hasAny reports whether s contains any of subs: a cheap test before a
// regexp that needs one of them.
func hasAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// findIf runs re only when the prefilter passed.
func findIf(ok bool, re *fastRE, s string) []int {
	if !ok {
		return nil
	}
	return re.FindStringIndex(s)
}

func findAllIf(ok bool, re *fastRE, s string) [][]int {
	if !ok {
		return nil
	}
	return re.FindAllStringSubmatchIndex(s, -1)
}

// distinctlyModified counts the different words that modify noun in s
// ("your default address … your office address" is two addresses; "the
// upgrade … your upgrade" one).
func distinctlyModified(s, noun string) int {
	seen := map[string]bool{}
	for off := 0; ; {
		i := inception.WordIndex(s[off:], noun)
		if i < 0 {
			return len(seen)
		}
		i += off
		off = i + len(noun)
		before := strings.Fields(s[max(0, i-20):i])
		if len(before) == 0 {
			continue
		}
		w := strings.Trim(before[len(before)-1], ",.;:()")
		if determiner[w] || w == "" {
			continue
		}
		seen[w] = true
	}
}

var determiner = map[string]bool{"the": true, "a": true, "an": true, "your": true, "my": true, "this": true, "that": true, "its": true, "their": true, "our": true, "his": true, "her": true, "any": true, "one": true}

// lastAgent returns the agent's last message, or "".
func lastAgent(earlier []inception.Utterance) string {
	for i := len(earlier) - 1; i >= 0; i-- {
		if earlier[i].Role == inception.RoleAgent {
			return earlier[i].Text
		}
	}
	return ""
}

// clockTime: an hour without minutes said as a time ("the 5 o'clock
// flight", "at 7 tomorrow").
var clockTime = mustFast(`\b(?:(\d{1,2}) ?o'?clock|(?:at|around|about) (\d{1,2})(?:\s*[,.!?]|\s*$| tomorrow| tonight| flight| one| departure))`)

// dayPart settles which half of the day an hour is in.
var dayPart = mustFast(`\b(?:am|pm|a\.m|p\.m|morning|afternoon|evening|night|tonight|noon|midnight)\b`)

// openClock returns a clock time that fits both 05:00 and 17:00: an hour
// from 1 to 12 without minutes, am/pm or a part of the day in its sentence.
func openClock(lower string) []int {
	if !hasAny(lower, "clock", "at ", "around ", "about ") {
		return nil
	}
	m := clockTime.FindStringSubmatchIndex(lower)
	if m == nil {
		return nil
	}
	hour := ""
	for _, g := range []int{2, 4} {
		if m[g] >= 0 {
			hour = lower[m[g]:m[g+1]]
		}
	}
	if len(hour) == 0 || hour == "0" || len(hour) == 2 && hour > "12" {
		return nil
	}
	if rest := lower[m[1]:]; strings.HasPrefix(rest, ":") || strings.HasPrefix(strings.TrimLeft(rest, " "), "am") || strings.HasPrefix(strings.TrimLeft(rest, " "), "pm") {
		return nil
	}
	if dayPart.MatchString(sentenceAround(lower, m[0], m[1])) {
		return nil
	}
	return m[:2]
}

// sharedModifier reports a modified noun ("the blue t-shirt") whose head
// the agent counts as several and whose modifier the agent gives more
// than one of them ("a blue one in M and a blue one in L"): the modifier
// picks none. A modifier the agent never used, or a position ("outgoing",
// "original"), is taken as picking one.
func sharedModifier(agent, noun string, several map[string]bool) bool {
	mod, head, ok := strings.Cut(noun, " ")
	if !ok || !several[head] || resolvingWords[mod] || legWord[mod] {
		return false
	}
	n := 0
	for off := 0; ; {
		i := inception.WordIndex(agent[off:], mod)
		if i < 0 {
			break
		}
		n++
		off += i + len(mod)
	}
	return n >= 2
}

// legWord names one leg of a trip.
var legWord = map[string]bool{"outgoing": true, "outbound": true, "return": true, "returning": true, "inbound": true, "departing": true, "connecting": true}

// negatedChoice reports "either" under a negation in its clause ("I don't
// want to keep either of them"): neither, a clear wish, not a choice
// handed over.
func negatedChoice(lower string, at int) bool {
	if !strings.HasPrefix(lower[at:], "either") {
		return false
	}
	clause := lower[:at]
	if i := strings.LastIndexAny(clause, ".!?;,"); i >= 0 {
		clause = clause[i+1:]
	}
	return negation.MatchString(clause)
}

// negation: a negated verb in a clause.
var negation = mustFast(`\b(?:don'?t|do not|doesn'?t|does not|didn'?t|did not|won'?t|will not|can'?t|cannot|not|never|no longer)\b`)
