package rules

import (
	"strings"

	"github.com/reinception/rein/inception"
)

// Contradiction: the user's own statements conflict, within the turn or
// with what they said before. An allowed correction (the user withdraws a
// statement and says which version holds) and a complaint about the agent
// (the user restates what they consistently said) are not contradictions.

// correction marks a withdrawn statement with a clear replacement.
var correction = mustFast(`\b(?:actually|on second thought|never ?mind|forget (?:it|that|about)|scratch that|instead|sorry,? i mean|i meant|i mean|make it|rather|changed my mind)\b`)

// consentThenRefusal: "yes, go ahead. no wait, don't." with nothing after.
var consentThenRefusal = mustFast(`\b(?:yes|ok|okay|sure|go ahead|do it|proceed)\b[^?]{0,30}\b(?:no|wait)\b[,.]?\s*(?:wait[,.]?\s*)?(?:don'?t|do not|stop|hold on)\b[.!]*\s*$`)

// consentStart: the turn opens by agreeing to what the agent proposed.
var consentStart = mustFast(`^\s*(?:yes|yeah|yep|correct|right|ok|okay|sure|great|perfect|that's right|go ahead)\b`)

// denial: "I never said I wanted to add bags".
var denial = mustFast(`\bi (?:never|didn'?t|did not|never ever) (?:say|said|ask|asked|want|wanted|mention|mentioned|tell|told)\b([^.!?;]{0,60})`)

// saidEarlier reports a content word of what is denied in an earlier user
// turn.
func saidEarlier(mm *memo, in inception.Input, denied string) bool {
	for _, w := range strings.Fields(denied) {
		w = strings.Trim(w, ",.!?'\"")
		if len(w) < 4 || contradictionWords[w] || functionWord[w] || strings.HasSuffix(w, "ed") {
			continue
		}
		for _, u := range in.Dialogue[:len(in.Dialogue)-1] {
			if u.Role == inception.RoleUser && inception.WordIndex(mm.user(u.Text).lower, w) >= 0 {
				return true
			}
		}
	}
	return false
}

// claimRef: the user says they said it before.
var claimRef = mustFast(`\b(?:as|like) i (?:said|asked|told you|mentioned|requested)\b`)

// claimed returns what the user says they said: the clause after "as I
// said," when it opens one, else the clause before it.
func claimed(lower string, loc []int) string {
	if rest := lower[loc[1]:]; strings.HasPrefix(rest, ",") {
		return sentenceAround(lower, loc[1]+1, loc[1]+1)
	}
	start := loc[0]
	for start > 0 && !strings.ContainsRune(".!?;", rune(lower[start-1])) {
		start--
	}
	return lower[start:loc[0]]
}

// unsaid reports a claim whose content the user's earlier turns mostly do
// not hold: most content words of what they now say they said are new.
func unsaid(mm *memo, in inception.Input, claim string) bool {
	var earlier strings.Builder
	for _, u := range in.Dialogue[:len(in.Dialogue)-1] {
		if u.Role == inception.RoleUser {
			earlier.WriteString(mm.user(u.Text).lower)
			earlier.WriteByte(' ')
		}
	}
	prev := earlier.String()
	content, missing := 0, 0
	for _, w := range strings.Fields(claim) {
		w = strings.Trim(w, ",.!?;:'\"")
		if len(w) < 4 || contradictionWords[w] || functionWord[w] || determiner[w] || refPronoun[w] || actionWord[w] {
			continue
		}
		content++
		if inception.WordIndex(prev, w) < 0 && inception.WordIndex(prev, strings.TrimSuffix(w, "s")) < 0 {
			missing++
		}
	}
	return content > 0 && 2*missing >= content
}

// actionWord are verbs a claim repeats from the request itself.
var actionWord = map[string]bool{"put": true, "book": true, "make": true, "please": true, "also": true, "add": true, "with": true, "have": true, "into": true, "onto": true}

// confirmStart: the turn confirms details the agent read back.
var confirmStart = mustFast(`^\s*(?:yes,? )?(?:correct|that's right|that is right|right|exactly)\b`)

// negatedVerb: "don't return", "do not change", "not cancel".
var negatedVerb = mustFast(`\b(?:don'?t|do not|never|not) (` + actionVerbs + `)\b`)

// keepVs pairs keeping with an action that undoes it in one turn: cancelling
// a whole order or reservation, downgrading, moving a leg.
var keepVs = mustFast(`\b(cancel|downgraded?|upgraded?|changed?|switch(?:ed)?|moved?)\b[^?]*\b(?:keep|stay in|stay on)\b|\b(?:keep|keeping)\b[^?]*\b(cancel)\b|\b(cancel)\b[^?]*\bstill (?:want|need)\b|\bstill (?:want|need)\b[^?]*\b(cancel)\b`)

// bothAndOne: "both … only one".
var bothAndOne = mustFast(`\b(?:both|all)\b[^?]*\bonly (?:one|the one|exchange one|return one|change one|cancel one)\b`)

// notXThenX: "only the visa, not gift cards … put $100 on the gift card".
var notThing = mustFast(`\b(?:not|no|never|without|don'?t (?:want|use|need|touch)(?: my| the| any)?) ((?:[a-z]+ )?[a-z]+)\b`)

// earlierNegated: what an earlier user turn ruled out ("no insurance", "I
// have no gift card", "don't touch my Las Vegas reservation").
var earlierNegated = mustFast(`\b(?:no|not (?:a|an|the|my|to (?:a|an|the|my))|without|don'?t (?:want|need|touch|add)(?: my| the| any)?|i have no) ([a-z]+(?: [a-z]+)?)\b`)

// justMe and withOthers: a passenger count stated one way, then another.
var (
	justMe     = mustFast(`\b(?:just me|only me|(?:just|only) myself|only one passenger|one passenger|by myself|alone|travelling solo|traveling solo)\b`)
	withOthers = mustFast(`\b(?:both of us|for us|the two of us|all of us|my (?:` + relatives + `)(?:'s)? (?:bag|ticket|seat|name|details)|(?:and|add|bring|book|include|also) my (?:` + relatives + `)|(?:she|he|they)(?:'s|'re| is| are| will| would) (?:be )?(?:come|coming|fly|flying|travell?ing|join|joining) (?:with )?(?:me|us))\b`)
)

// relatives are the people a user may add as passengers.
const relatives = `husband|wife|partner|friend|son|daughter|kids|mom|dad|mother|father|brother|sister|colleague`

// soloThenOthers finds a passenger count stated both ways in one turn ("me
// alone … my brother, he will come with me"), a correction between them
// excepted ("just me, sorry, no, my wife too").
func soloThenOthers(lower string) []int {
	solo := justMe.FindStringIndex(lower)
	if solo == nil {
		return nil
	}
	rest := lower[solo[1]:]
	loc := withOthers.FindStringIndex(rest)
	if loc == nil || correction.MatchString(rest[:loc[0]]) {
		return nil
	}
	return []int{solo[0], solo[1] + loc[1]}
}

// contradictionWords are too common to carry a conflict alone.
var contradictionWords = map[string]bool{
	"the": true, "a": true, "an": true, "my": true, "it": true, "that": true, "this": true, "i": true, "you": true, "problem": true,
	"thanks": true, "thank": true, "worries": true, "need": true, "want": true, "longer": true, "sure": true, "wait": true,
	"more": true, "other": true, "yet": true, "anything": true, "one": true, "just": true, "really": true, "so": true,
	"way": true, "mind": true, "change": true, "changes": true, "idea": true, "before": true, "after": true, "later": true, "earlier": true,
}

// contradiction reports the location of a conflict, within the turn or
// with the user's earlier statements.
func contradiction(mm *memo, in inception.Input, lower string) []int {
	negation := hasAny(lower, "n't", "not", "never", "no ", "without", "don")
	if loc := findIf(negation || hasAny(lower, "stop", "hold"), consentThenRefusal, lower); loc != nil {
		return loc
	}
	corrected := correction.FindStringIndex(lower)
	before := func(loc []int) bool { return corrected == nil || loc[0] < corrected[0] }
	if loc := findIf(hasAny(lower, "keep", "stay", "still"), keepVs, lower); loc != nil && before(loc) && !strings.Contains(lower[loc[0]:loc[1]], " if ") && !partition(lower[loc[0]:]) {
		return loc
	}
	if loc := findIf(strings.Contains(lower, "only"), bothAndOne, lower); loc != nil && before(loc) {
		return loc
	}
	if loc := exceptAlso(lower); loc != nil && before(loc) {
		return loc
	}
	for _, check := range []func(string) []int{soloThenOthers, soloAndCounted, oppositeActions, selfNegated} {
		if loc := check(lower); loc != nil {
			return loc
		}
	}
	if loc := oneWayThenReturn(in, lower); loc != nil {
		return loc
	}
	// "don't V" next to V asked for in the same turn or agreed to just now.
	for _, m := range findAllIf(negation, negatedVerb, lower) {
		if !before(m) {
			continue
		}
		v := lower[m[2]:m[3]]
		rest := lower[:m[0]] + " " + lower[m[1]:]
		agreed := consentStart.MatchString(lower) && strings.Contains(mm.agent(lastAgent(in.Dialogue[:len(in.Dialogue)-1])).lower, v)
		if affirmed(rest, v) || agreed {
			return m[:2]
		}
	}
	// "not X" then X used in the same turn.
	for _, m := range findAllIf(negation, notThing, lower) {
		thing := strings.TrimSuffix(lastWordOf(lower[m[2]:m[3]]), "s")
		if contradictionWords[thing] || len(thing) < 4 || !before(m) {
			continue
		}
		if rest := lower[m[1]:]; inception.WordIndex(rest, thing) >= 0 && !negatedBefore(rest, inception.WordIndex(rest, thing)) {
			return m[:2]
		}
	}
	if loc := contradictionFromUser(mm, in, lower); loc != nil {
		return loc
	}

	// Agreeing to a value while stating another one.
	if confirmStart.MatchString(lower) || consentStart.MatchString(lower) {
		af := mm.agent(lastAgent(in.Dialogue[:len(in.Dialogue)-1]))
		agent := af.lower
		numbers, quantities := af.readBack()
		if loc := otherNumber(numbers, lower); loc != nil && confirmStart.MatchString(lower) {
			return loc
		}
		// A read-back ("To confirm: … Proceed?") answered in a few words.
		readBack := strings.Contains(agent, "confirm") || strings.HasSuffix(strings.TrimSpace(agent), "?")
		if loc := otherQuantity(quantities, lower); loc != nil && readBack && len(strings.Fields(lower)) <= 15 && !hasCorrection(lower) {
			return loc
		}
	}
	return nil
}

// contradictionFromUser holds the checks that read the user's turns only
// (never the agent's): a claim to have said what they did not, a denial of
// what they did say (denying what they never said is a complaint about the
// agent), and asking for what they ruled out earlier.
func contradictionFromUser(mm *memo, in inception.Input, lower string) []int {
	if loc := findIf(hasAny(lower, " i said", " i asked", " i told", " i mentioned", " i requested"), claimRef, lower); loc != nil && hasUserTurn(in.Dialogue[:len(in.Dialogue)-1]) && unsaid(mm, in, claimed(lower, loc)) {
		return loc
	}
	if m := findSubIf(hasAny(lower, "never", "didn", "did not"), denial, lower); m != nil && saidEarlier(mm, in, lower[m[2]:m[3]]) {
		return m[:2]
	}
	return againstEarlier(mm, in, lower)
}

// affirmed reports v (or its -ing form) used without negation in text.
func affirmed(text, v string) bool {
	for _, form := range []string{v, strings.TrimSuffix(v, "e") + "ing", v + "ing", v + "ed", v + "d"} {
		for off := 0; ; {
			i := strings.Index(text[off:], form)
			if i < 0 {
				break
			}
			i += off
			off = i + len(form)
			if (i > 0 && isASCIIWord(text[i-1])) || (off < len(text) && isASCIIWord(text[off])) {
				continue
			}
			if !negatedBefore(text, i) && !strings.HasSuffix(strings.TrimSpace(text[:i]), "if i") {
				return true
			}
		}
	}
	return false
}

func lastWordOf(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// againstEarlier finds something the user ruled out earlier and now asks
// for, or a passenger count stated both ways.
func againstEarlier(mm *memo, in inception.Input, lower string) []int {
	earlier := in.Dialogue[:len(in.Dialogue)-1]
	for _, u := range earlier {
		if u.Role != inception.RoleUser {
			continue
		}
		prev := mm.user(u.Text) // the earlier turn's negations, derived once
		if prev.justMe && !hasCorrection(lower) {
			if loc := withOthers.FindStringIndex(lower); loc != nil {
				return loc
			}
		}
		for _, term := range prev.ruledOut {
			i := inception.WordIndex(lower, term)
			if i < 0 {
				// "travel insurance" ruled out, "the insurance" asked for.
				if head := lastWordOf(term); head != term && len(head) >= 5 {
					term, i = head, inception.WordIndex(lower, head)
				}
			}
			if i >= 0 && !negatedBefore(lower, i) {
				return []int{i, i + len(term)}
			}
		}
	}
	return nil
}

// earlierTerm is what an earlier negation ruled out, as the phrase to look
// for now: both words of a compound ("gift card", "travel insurance"), a
// single noun otherwise; "" for verbs and function words.
func earlierTerm(phrase string) string {
	words := strings.Fields(phrase)
	for len(words) > 0 && (contradictionWords[words[0]] || stopNoun[words[0]] || determiner[words[0]]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return ""
	}
	if len(words) == 2 && (functionWord[words[1]] || contradictionWords[words[1]] || len(words[1]) < 3) {
		words = words[:1]
	}
	for _, w := range words {
		if strings.HasSuffix(w, "ing") || strings.HasSuffix(w, "ed") || len(w) < 4 && len(words) == 1 {
			return ""
		}
	}
	return strings.Join(words, " ")
}

func findSubIf(ok bool, re *fastRE, s string) []int {
	if !ok {
		return nil
	}
	return re.FindStringSubmatchIndex(s)
}

// number matches digit runs of three or more (zip codes, amounts, ids).
var number = mustFast(`\b\d{3,}\b`)

// otherNumber finds, in a turn that agrees with the agent, a number of the
// same length as one the agent stated but different from all of them
// ("yes correct, … 92130" to "… 92103?").
// theirs are the agent's numbers (agentFacts.numbers).
func otherNumber(theirs []string, lower string) []int {
	if len(theirs) == 0 {
		return nil
	}
	for _, loc := range number.FindAllStringIndex(lower, -1) {
		n := lower[loc[0]:loc[1]]
		sameLen, same := false, false
		for _, t := range theirs {
			same = same || t == n
			sameLen = sameLen || len(t) == len(n)
		}
		if sameLen && !same {
			return loc
		}
	}
	return nil
}

// quantity matches an amount with its unit: "2 checked bags", "256gb",
// "3 bags", "two passengers".
var quantity = mustFast(`\b(\d+|one|two|three|four|five|six)(?: ?(gb|tb|mb|l|ml|mp|inch|in|oz|lbs?|kg|mm|w)\b| (?:[a-z]+ )?([a-z]{3,}))`)

// otherQuantity finds, in a turn agreeing to what the agent read back, an
// amount of the same unit as one the agent stated but with another value
// ("add 2 checked bags … Proceed?" → "yes that's right, just the 3 bags";
// "256GB" → "yes correct, the 512GB one").
// theirs are the agent's amounts by unit (agentQuantities).
func otherQuantity(theirs map[string]string, lower string) []int {
	if len(theirs) == 0 || !quantity.may(lower) {
		return nil
	}
	for _, m := range quantity.FindAllStringSubmatchIndex(lower, -1) {
		sm := make([]string, 4)
		for g := 0; g < 4; g++ {
			if m[2*g] >= 0 {
				sm[g] = lower[m[2*g]:m[2*g+1]]
			}
		}
		u := quantityUnit(sm)
		if vals, ok := theirs[u]; ok && u != "" && !strings.Contains(vals, "|"+sm[1]+"|") {
			return m[:2]
		}
	}
	return nil
}

// agentQuantities are the values of the amounts a text states, by unit
// ("|2||3|"); nil for none.
func agentQuantities(agent string) map[string]string {
	if !quantity.may(agent) {
		return nil
	}
	var theirs map[string]string // unit → values
	for _, m := range quantity.FindAllStringSubmatch(agent, -1) {
		if u := quantityUnit(m); u != "" {
			if theirs == nil {
				theirs = map[string]string{}
			}
			theirs[u] += "|" + m[1] + "|"
		}
	}
	return theirs
}

// quantityUnit is the unit of a quantity match, singular; "" for a word
// that is no unit of count (a verb, "more").
func quantityUnit(m []string) string {
	if m[2] != "" {
		return m[2]
	}
	u := strings.TrimSuffix(m[3], "s")
	if functionWord[u] || determiner[u] || u == "more" || u == "other" || u == "of" || len(u) < 3 {
		return ""
	}
	return u
}

// corrected reports a correction marker in the turn: the user says which
// value holds ("make it 3 bags").
func hasCorrection(lower string) bool { return correction.MatchString(lower) }

// enumConflict finds two values of one enum of the agent's tools asked
// for at once ("the cheapest economy fare but I also want … business
// class"): both cannot hold. A change from one to the other ("from
// economy to business", "upgrade … to business", "instead of") is no
// conflict.
func enumConflict(cr *catalogRules, lower string) []int {
	loc := twoEnumValues(cr, lower)
	if loc == nil {
		return nil
	}
	span := lower[loc[0]:loc[1]]
	if !hasAny(span, "but also", "but i also", "and also", "also want", "as well as", "but i want", "but i'd like") {
		return nil
	}
	if hasAny(span, " from ", " to ", "instead", "rather", "upgrade", "downgrade", "change", "switch", "move") {
		return nil
	}
	return loc
}
