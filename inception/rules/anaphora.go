package rules

import (
	"regexp"
	"slices"
	"strings"

	"github.com/reinception/rein/inception"
)

// Anaphora: a pronoun, demonstrative or "one"-substitute whose antecedent
// is not unique. The rules module finds the reference in the user turn,
// then counts the candidate entities of the kind in play (what the agent
// just listed, in prose, bullets or a summarised tool result), whatever
// the agent asked.

// refVerb is a verb or preposition that takes an entity as its object.
const refVerb = `cancel|change|modify|return|exchange|refund|upgrade|downgrade|rebook|remove|switch|update|move|book|swap|put|add|ship|send|use|take|pick|choose|select|delete|drop|postpone|reschedule|push|go with|status of`

// pronounRef matches a pronoun or demonstrative used as an entity
// reference: after a verb or preposition, or a "one" substitute anywhere.
var pronounRef = mustFast(`\b(?:(?:` + refVerb + `) (?:that|those) (?:reservations?|bookings?|flights?|trips?|tickets?|orders?|items?|products?|packages?)|(?:` + refVerb + `) (?:it|them|that|this|those|these|his|hers|her)(?: (?:one|ones|two|three|four))?|(?:that|this|the other) ones?|(?:these|those)(?: two| three| ones)?)\b|\bthe other[.,!?]`)

// refPronoun are the pronouns a verb can take as an entity reference.
var refPronoun = map[string]bool{"it": true, "them": true, "that": true, "this": true, "those": true, "these": true, "his": true, "hers": true, "her": true}

// refVerbs is refVerb as a set of single words; "go with" and "status
// of" are matched on their last word with the one before.
var refVerbs = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range strings.Split(refVerb, "|") {
		if !strings.Contains(v, " ") {
			m[v] = true
		}
	}
	return m
}()

var refNouns = map[string]bool{
	"reservation": true, "reservations": true, "booking": true, "bookings": true, "flight": true, "flights": true,
	"trip": true, "trips": true, "ticket": true, "tickets": true, "order": true, "orders": true, "item": true,
	"items": true, "product": true, "products": true, "package": true, "packages": true,
}

// findRefs returns the locations pronounRef matches, found by scanning
// words (the regexp is its specification; this runs on every turn). It
// looks at most one word back and two ahead, so it keeps those four
// words only: no closure and no array of the turn's words on the stack.
func findRefs(lower string) [][]int {
	var out [][]int
	ws := wordScan{s: lower}
	ws.start()
	for ; ws.win[1].start >= 0; ws.shift() {
		w, next, after := ws.word(1), ws.word(2), ws.word(3)
		verb := refVerbs[w] || w == "with" && ws.word(0) == "go" || w == "of" && ws.word(0) == "status"
		switch {
		case verb && refPronoun[next]:
			end := ws.win[2].end
			if after == "one" || after == "ones" || after == "two" || after == "three" || after == "four" {
				end = ws.win[3].end
			} else if (next == "that" || next == "those") && refNouns[after] {
				end = ws.win[3].end
			}
			start := ws.win[1].start
			if w == "with" || w == "of" {
				start = ws.win[0].start
			}
			out = append(out, []int{start, end})
			ws.shift()
		case (w == "that" || w == "this") && (next == "one" || next == "ones"):
			out = append(out, []int{ws.win[1].start, ws.win[2].end})
			ws.shift()
		case w == "the" && next == "other":
			if after == "one" || after == "ones" {
				out = append(out, []int{ws.win[1].start, ws.win[3].end})
				ws.shift()
				ws.shift()
			} else if e := ws.win[2].end; e < len(lower) && strings.ContainsRune(".,!?", rune(lower[e])) {
				out = append(out, []int{ws.win[1].start, e})
				ws.shift()
			}
		case w == "these" || w == "those":
			start, end := ws.win[1].start, ws.win[1].end
			if next == "two" || next == "three" || next == "ones" {
				end = ws.win[2].end
				ws.shift()
			}
			out = append(out, []int{start, end})
		}
	}
	return out
}

// wordScan walks the words of a text (as forEachWord finds them) with a
// window of four: the previous word, the current one and the two after
// it; an absent word has start -1.
type wordScan struct {
	s   string
	pos int
	win [4]struct{ start, end int }
}

// start fills the window: no previous word, the first three.
func (ws *wordScan) start() {
	ws.win[0].start, ws.win[0].end = -1, -1
	for i := 1; i < len(ws.win); i++ {
		ws.win[i].start, ws.win[i].end = ws.next()
	}
}

// word is the text of window slot k, "" when absent.
func (ws *wordScan) word(k int) string {
	if ws.win[k].start < 0 {
		return ""
	}
	return ws.s[ws.win[k].start:ws.win[k].end]
}

// shift moves the window one word on.
func (ws *wordScan) shift() {
	copy(ws.win[:3], ws.win[1:])
	ws.win[3].start, ws.win[3].end = ws.next()
}

// next returns the bounds of the next word from pos, or -1, -1.
func (ws *wordScan) next() (start, end int) {
	s, i := ws.s, ws.pos
	for i < len(s) && !isASCIIWord(s[i]) && s[i] != '\'' {
		i++
	}
	if i == len(s) {
		ws.pos = i
		return -1, -1
	}
	start = i
	for i < len(s) && (isASCIIWord(s[i]) || s[i] == '\'') {
		i++
	}
	ws.pos = i
	return start, i
}

// forEachWord calls fn with the bounds of every run of ASCII letters,
// digits and apostrophes.
func forEachWord(s string, fn func(start, end int)) {
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && (isASCIIWord(s[i]) || s[i] == '\'') {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			fn(start, i)
			start = -1
		}
	}
}

// wholeSet: a plural reference to every entity in play ("all of them",
// "both of those", "none of these").
var wholeSet = mustFast(`\b(?:all|both|neither|none|each|any|every one) of\s*$|\b(?:all|both)\s*$`)

// entityNoun maps a noun a reference names to the entity kind it counts
// (EntityNote names start with it).
var entityNoun = map[string]string{
	"reservation": "reservation", "booking": "reservation", "trip": "reservation", "ticket": "reservation",
	"flight": "flight", "order": "order", "item": "item", "product": "item", "package": "order",
}

// inTurnDetail: a description in the user turn that picks an entity (a
// date, a route, an amount) before the reference.
var inTurnDetail = mustFast(`\b(?:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)|from [a-z]+ to [a-z]+|\$\d+)\b`)

// notAReference follows a match that is not an entity reference ("that's
// all", "it is", "with that said").
var notAReference = mustFast(`^(?:'s|’s| is| was| said| would| will| way| day| time| week| month| case| number| too)\b`)

// theXOne matches a "one"-substitute resolved by a property ("the business
// one", "the $500 one").
var theXOne = mustFast(`\bthe ([a-z0-9$.:-]+(?: [a-z0-9$.:-]+)?) ones?\b`)

// resolvingWords are properties of "the X one" that pick one entity by
// position or rank whatever the list holds.
var resolvingWords = map[string]bool{
	"first": true, "second": true, "third": true, "fourth": true, "last": true, "latter": true, "former": true,
	"cheapest": true, "cheaper": true, "earliest": true, "earlier": true, "latest": true, "later": true,
	"same": true, "new": true, "original": true, "current": true, "most": true, "only": true, "whole": true,
	"next": true, "previous": true, "shortest": true, "longest": true, "biggest": true, "smallest": true,
}

// inTurnNoun finds a determiner + noun phrase before a pronoun in the same
// turn: a candidate antecedent ("the kettle … cancel it").
var inTurnNoun = mustFast(`\b(?:the|my|our|a|an|one|this|that|recent|new|existing)((?: [a-z0-9-]+){1,2})\b`)

// antecedentStop are words an in-turn noun phrase ends in that name no
// entity.
var antecedentStop = map[string]bool{
	"way": true, "money": true, "refund": true, "difference": true, "price": true, "rest": true, "thing": true,
	"time": true, "same": true, "moment": true, "day": true, "one": true, "ones": true, "option": true, "end": true,
	"help": true, "issue": true, "problem": true, "status": true, "agent": true, "human": true,
	"card": true, "address": true, "policy": true, "fee": true, "fees": true, "week": true, "weekend": true,
}

// anaphora reports an unresolved reference and its location.
func anaphora(mm *memo, dr *domainRules, in inception.Input, lower string) []int {
	earlier := in.Dialogue[:len(in.Dialogue)-1]
	// The candidates of a kind, computed once per kind.
	var kinds [4]struct {
		kind string
		c    candidates
		ok   bool
	}
	play := func(kind string) candidates {
		for i := range kinds {
			if kinds[i].ok && kinds[i].kind == kind {
				return kinds[i].c
			}
			if !kinds[i].ok {
				kinds[i].kind, kinds[i].c, kinds[i].ok = kind, inPlay(mm, dr, earlier, kind), true
				return kinds[i].c
			}
		}
		return inPlay(mm, dr, earlier, kind)
	}
	// A "the X one" whose property several listed entities share.
	if len(earlier) > 0 {
		for _, m := range openProperties(lower) {
			c := play("")
			// Or that none has ("the black one" among a dumbbell set, an
			// espresso machine and a coffee maker): no antecedent. Only
			// among entities listed by name: ids come with codes ("LGA to
			// SEA") a property may decode ("the seattle one").
			// A comparative or superlative ("the larger one") ranks them
			// instead.
			prop := lower[m[2]:m[3]]
			// "the date to one day later" is no "one"-substitute.
			ranks := strings.HasSuffix(firstWord(prop), "er") || strings.HasSuffix(firstWord(prop), "est") || functionWord[lastWordOf(prop)]
			// "change the coffee maker to the 8 cup one": a target value,
			// not a listed entity.
			target := hasSuffixAny(strings.TrimRight(lower[:m[0]], " "), " to", " for", " into", " with")
			if n := c.matching(prop); len(c.spans) >= 2 && (n >= 2 || n == 0 && c.ids < 2 && !ranks && !target) {
				return m[:2]
			}
		}
	}
	text := in.Dialogue[len(in.Dialogue)-1].Text
	if len(earlier) > 0 && !idInTurn(dr, text) {
		// "that one in economy" among three economy flights: the words
		// after the reference pick none of the listed entities.
		for _, loc := range findRefs(lower) {
			ref := lower[loc[0]:loc[1]]
			if !strings.HasSuffix(ref, " one") || !weakDescriptor(lower[loc[1]:]) || propertyBefore(lower[:loc[0]]) {
				continue
			}
			if c := play(refKind(ref)); c.count() >= 2 && !resolvedAfter(c, lower[loc[1]:]) {
				return loc
			}
		}
		// "the one on the 24th" when two listed entities are on the 24th.
		if loc := theOneShared(lower, play("")); loc != nil {
			return loc
		}
		// "his birthday" with two passengers named.
		// (Not when the turn names the person before it: "Ivan Smith … his
		// date of birth".)
		if loc := possessiveRef.FindStringIndex(lower); loc != nil && people(lastAgent(earlier)) >= 2 &&
			!strings.Contains(lower[:loc[0]], "name") && !personName.MatchString(text[:loc[0]]) {
			return loc
		}
	}
	for _, loc := range mm.openRefs(dr, text) {
		ref := lower[loc[0]:loc[1]]
		words := antecedentWords(lower[:loc[0]])
		if len(earlier) == 0 {
			if len(words) > 0 {
				return nil // "I booked a flight … cancel it"
			}
			return loc // nothing said before: nothing to refer to
		}
		c := play(refKind(ref))
		// "the second order … change the address on it", "the 4 ft
		// bookshelf - swap it": the turn picked one entity itself before
		// the reference, by rank or by a phrase only one listed entity fits.
		if pickedInTurn(c, lower[:loc[0]]) {
			return nil
		}
		if fit, entity := c.antecedent(words); fit > 0 || entity {
			// "the kettle … cancel it": the antecedent is the noun phrase,
			// ambiguous only if several listed entities fit it; a plural
			// names them all.
			if !plural(ref) && fit >= 2 {
				return loc
			}
			return nil
		}
		n := c.count()
		if k := countIn(ref); k > 0 && n != k {
			return loc // "those two" among one or three
		}
		switch {
		case strings.Contains(ref, "the other"):
			if n != 2 {
				return loc
			}
		case plural(ref):
			if n > 2 {
				return loc
			}
		case n >= 2:
			return loc
		}
	}
	return nil
}

// openProperties returns the submatches of the turn's "the X one"
// references whose property picks no entity by itself (not "the other",
// "the cheapest", "the one from Boston"): the user turn alone decides this.
func openProperties(lower string) [][]int {
	var out [][]int
	for _, m := range findAllIf(strings.Contains(lower, " one"), theXOne, lower) {
		prop := lower[m[2]:m[3]]
		// "the black one to stainless steel": words after it that say
		// what to do (weakDescriptor) leave the property to decide.
		if prop == "other" || resolvingWords[firstWord(prop)] || descriptorAfter.MatchString(lower[m[1]:]) && !weakDescriptor(lower[m[1]:]) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// openRefs returns the pronoun and demonstrative references the user turn
// itself leaves open, judged from the turn alone: not "that one from
// Boston", "for that reason", "all of them" or "those options", and none at
// all when the turn names an id or describes the entity. Whether an open
// reference is ambiguous depends on the candidates in play.
func openRefs(dr *domainRules, text, lower string) [][]int {
	var out [][]int
	for _, loc := range append(append(findRefs(lower), prepRefs(lower)...), clauseEndRefs(lower)...) {
		ref := lower[loc[0]:loc[1]]
		if notAReference.MatchString(lower[loc[1]:]) {
			continue
		}
		if (strings.HasSuffix(ref, "one") || strings.HasSuffix(ref, "ones") || refKind(ref) != "") && describedAfter(lower[loc[1]:]) {
			continue // "that one from Boston"
		}
		if (strings.HasSuffix(ref, " that") || strings.HasSuffix(ref, " this")) && strings.HasPrefix(lower[loc[1]:], " ") && !endsReference(lower[loc[1]:]) {
			continue // "for that reason", "about that price"
		}
		if idInTurn(dr, text) || propertyBefore(lower[:loc[0]]) || inTurnDetail.MatchString(lower[:loc[0]]) {
			return nil // the user names or describes the entity
		}
		if plural(ref) && wholeSet.MatchString(lower[:loc[0]]) {
			continue // the whole set
		}
		if (strings.HasPrefix(ref, "these") || strings.HasPrefix(ref, "those")) && !strings.Contains(ref, " ") {
			// A bare plural refers to entities only as the object of an
			// action ("change the colour on those"), not "those options",
			// "among these" or after the user's own "which of these".
			if !endsReference(lower[loc[1]:]) || !bareNounHead[lastWordOf(lower[:loc[0]])] && lastWordOf(lower[:loc[0]]) != "for" || strings.Contains(lower[:loc[0]], "which of") {
				continue
			}
		}
		out = append(out, loc)
	}
	return out
}

// propertyBefore reports a "the X one" earlier in the turn that names a
// property ("the seattle one — cancel it"), not "the other one".
func propertyBefore(before string) bool {
	if !strings.Contains(before, " one") {
		return false
	}
	for _, m := range theXOne.FindAllStringSubmatch(before, -1) {
		if m[1] != "other" {
			return true
		}
	}
	return false
}

// refKind returns the entity kind a reference names ("that order"), or "".
func refKind(ref string) string {
	for _, w := range strings.Fields(ref) {
		if k := entityNoun[strings.TrimSuffix(w, "s")]; k != "" {
			return k
		}
	}
	return ""
}

func firstWord(s string) string {
	if i := strings.IndexByte(s, ' '); i > 0 {
		return s[:i]
	}
	return s
}

func plural(ref string) bool {
	if strings.HasPrefix(ref, "one of ") {
		return false // "one of them" is one entity of the set
	}
	for _, w := range []string{"them", "those", "these", "ones"} {
		if strings.Contains(ref, w) {
			return true
		}
	}
	return false
}

// endsReference reports "that" used as a pronoun: followed by the end of a
// clause rather than a noun.
func endsReference(rest string) bool {
	rest = strings.TrimLeft(rest, " ")
	if rest == "" || strings.ContainsRune(".,!?;:)—-", rune(rest[0])) {
		return true
	}
	w := firstWord(rest)
	switch strings.Trim(w, ".,!?") {
	case "to", "too", "for", "and", "please", "pls", "as", "instead", "now", "then", "also", "again", "one", "with", "on", "in", "into", "from", "back", "off", "out", "up":
		return true
	}
	return false
}

// antecedentWords returns the content words, singular, of the last noun
// phrase before the pronoun, or nil.
func antecedentWords(before string) []string {
	ms := inTurnNoun.FindAllStringSubmatch(before, -1)
	for i := len(ms) - 1; i >= 0; i-- {
		var out []string
		for _, w := range strings.Fields(ms[i][1]) {
			noun := strings.TrimSuffix(w, "s")
			if len(noun) < 3 || antecedentStop[noun] || antecedentStop[w] || stopNoun[noun] || functionWord[w] {
				continue
			}
			out = append(out, noun)
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// antecedent returns how many listed entities the in-turn noun phrase fits
// (its best word) and whether it names an entity kind: a phrase that fits
// none and names no kind ("my boss", "the colour") is no antecedent.
func (c candidates) antecedent(words []string) (fit int, entity bool) {
	for _, w := range words {
		fit = max(fit, c.matching(w))
		entity = entity || entityNoun[w] != ""
	}
	return fit, entity
}

// countIn returns the number a plural reference states ("those two"), or 0.
func countIn(ref string) int {
	for w, n := range map[string]int{" two": 2, " three": 3, " four": 4} {
		if strings.HasSuffix(ref, w) {
			return n
		}
	}
	return 0
}

// describedAfter reports a reference the user resolves in the same breath
// ("that one from Boston"); "for me" describes no entity.
func describedAfter(rest string) bool {
	if !descriptorAfter.MatchString(rest) {
		return false
	}
	r := strings.TrimLeft(rest, " ")
	for _, p := range []string{"for me", "for us", "for him", "for her", "for my", "to the next", "to a later", "to an earlier", "to the following"} {
		if strings.HasPrefix(r, p) {
			return false
		}
	}
	return true
}

// stopNoun are words that follow a determiner but name no entity.
var stopNoun = map[string]bool{"lot": true, "bit": true, "few": true, "couple": true, "good": true, "nice": true, "problem": true, "question": true, "quick": true, "mistake": true, "gift": true}

// idInTurn reports an entity id in the user turn (as typed: users type
// ids in lower case too, which counts when it holds a digit).
func idInTurn(dr *domainRules, text string) bool {
	if dr == nil {
		return false
	}
	found := false
	forEachToken(text, func(start, end int) {
		tok := strings.TrimPrefix(text[start:end], "#")
		if found || !idShaped(tok) && !hasDigit(tok) || len(tok) < 4 {
			return
		}
		tok = strings.ToUpper(tok)
		for _, re := range dr.entities {
			if re.MatchString(tok) || re.MatchString("#"+tok) {
				found = true
				return
			}
		}
	})
	return found
}

// inPlay returns the candidates of the latest agent message that lists
// any, scanning back over the agent messages of earlier (the windowed
// dialogue; the user's own words do not put entities in play for a
// pronoun of theirs).
func inPlay(mm *memo, dr *domainRules, earlier []inception.Utterance, kind string) candidates {
	var last candidates
	seen := 0
	for i := len(earlier) - 1; i >= 0; i-- {
		if earlier[i].Role != inception.RoleAgent {
			continue
		}
		seen++
		c := mm.candidates(dr, earlier[i].Text, kind)
		if seen == 1 {
			last = c
		}
		if c.count() > 0 {
			return c
		}
	}
	return last
}

// prepRefs finds a pronoun after "to"/"on"/"onto" that follows an action
// verb within six words ("add a checked bag to it", "refund the money to
// that"): the entity acted on.
func prepRefs(lower string) [][]int {
	if !hasAny(lower, " to ", " on ", " onto ") {
		return nil
	}
	var ws [][2]int
	forEachWord(lower, func(start, end int) { ws = append(ws, [2]int{start, end}) })
	var out [][]int
	for i := 1; i+1 < len(ws); i++ {
		w, next := lower[ws[i][0]:ws[i][1]], lower[ws[i+1][0]:ws[i+1][1]]
		if w != "to" && w != "on" && w != "onto" || !refPronoun[next] || next == "his" || next == "her" || next == "hers" {
			continue
		}
		if i+2 < len(ws) && strings.HasPrefix(lower[ws[i+2][0]:ws[i+2][1]], "one") {
			continue // "on that one": findRefs has it, with its descriptor
		}
		for j := max(0, i-6); j < i; j++ {
			if refVerbs[lower[ws[j][0]:ws[j][1]]] {
				out = append(out, []int{ws[i][0], ws[i+1][1]})
				break
			}
		}
	}
	return out
}

// resolvedAfter reports a descriptor after a reference ("that one from
// Boston") that picks one listed entity: a content word of the next few
// words that exactly one candidate mentions. With no listed spans to
// compare, the descriptor is taken as resolving.
func resolvedAfter(c candidates, rest string) bool {
	if len(c.spans) < 2 {
		return true
	}
	words := strings.Fields(rest)
	if len(words) > 5 {
		words = words[:5]
	}
	for _, w := range words {
		w = strings.Trim(w, ",.!?;:()")
		if len(w) < 3 || functionWord[w] || determiner[w] {
			continue
		}
		if c.matching(w) == 1 {
			return true
		}
	}
	return false
}

// possessiveRef finds "his"/"her"/"their" + noun in a turn whose context
// lists two or more people ("Omar Rossi and Ivan Rossi").
var possessiveRef = mustFast(`\b(?:his|her|their) [a-z]+`)

// personName matches a capitalised first and last name.
var personName = regexp.MustCompile(`\b[A-Z][a-z]+ [A-Z][a-z]+\b`)

// people counts the distinct capitalised names in the agent's message.
func people(agent string) int {
	seen := map[string]bool{}
	for _, n := range personName.FindAllString(agent, -1) {
		if !nameStop[strings.Fields(n)[0]] {
			seen[n] = true
		}
	}
	return len(seen)
}

// nameStop are capitalised words that open a sentence, not a name.
var nameStop = map[string]bool{"The": true, "Your": true, "Here": true, "This": true, "Order": true, "Reservation": true, "Flight": true, "Thanks": true, "Thank": true, "Sure": true, "Please": true, "Which": true, "Would": true, "Okay": true, "Great": true, "Hello": true, "Welcome": true}

// describedOneRef reports a "that one"-like reference followed by a
// descriptor, which anaphora checks against the listed entities.
func describedOneRef(lower string) bool {
	for _, loc := range findRefs(lower) {
		if strings.HasSuffix(lower[loc[0]:loc[1]], " one") && weakDescriptor(lower[loc[1]:]) {
			return true
		}
	}
	return false
}

// weakDescriptor reports words after a reference that may describe what
// the user wants done rather than which entity ("that one in economy",
// "this one for the grey version", "that one to my Chicago address"),
// checked against the listed entities; "from Boston", "on May 20" or
// "that I booked" describe the entity and resolve it as before.
func weakDescriptor(rest string) bool {
	if !describedAfter(rest) {
		return false
	}
	switch firstWord(strings.TrimLeft(rest, " ")) {
	case "in", "for", "to", "with", "at":
		return true
	}
	return false
}

// pickedPhrase: a determiner and up to three words before a reference, a
// noun phrase that may pick one listed entity.
var pickedPhrase = mustFast(`\b(?:the|my|our)((?: [a-z0-9-]+){1,3})`)

// pickedInTurn reports a noun phrase before the reference, in the same
// turn, that picks one entity: a rank word followed by an entity noun ("the
// second order", "the last reservation"), or words (numbers and units
// included) that all appear in exactly one listed entity ("the 4 ft
// bookshelf" among a 3 ft and a 4 ft one).
func pickedInTurn(c candidates, before string) bool {
	for _, m := range pickedPhrase.FindAllStringSubmatchIndex(before, -1) {
		words := strings.Fields(before[m[2]:m[3]])
		if len(words) >= 2 && resolvingWords[words[0]] && words[0] != "same" && entityNoun[strings.TrimSuffix(words[1], "s")] != "" {
			return true
		}
		if len(words) >= 2 && len(c.spans) >= 2 && c.fitsOne(words) {
			return true
		}
	}
	return false
}

// fitsOne reports words that all appear, as whole tokens, in exactly one
// listed entity, with a number or a unit among them (a bare noun fits
// several entities of one kind: "the bookshelf").
func (c candidates) fitsOne(words []string) bool {
	if !slices.ContainsFunc(words, func(w string) bool { return hasDigit(w) }) {
		return false
	}
	n := 0
	for _, s := range c.spans {
		toks := map[string]bool{}
		forEachToken(s, func(a, b int) { toks[s[a:b]] = true })
		all := true
		for _, w := range words {
			if !toks[w] && !toks[strings.TrimSuffix(w, "s")] {
				all = false
				break
			}
		}
		if all {
			n++
		}
	}
	return n == 1
}
