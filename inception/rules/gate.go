package rules

import (
	"strings"

	"github.com/reinception/rein/inception"
)

// The cascade's gate (Recall) sends a turn to the model when the
// unsupported checks fire or when a looser version of a precise check
// does, read from the user's turns alone. A turn
// it holds back never reaches the model, so the loose checks favour
// recall: a clean turn let through costs one model call, an erroneous one
// held back is lost. Each loose check keeps the signal of its precise
// counterpart and drops the step that resolves it.

var (
	// gateAlternative: an open choice or an alternative of any kind.
	gateAlternative = mustFast(`\b(?:either|whichever|whatever|however|up to you|not sure|or (?:just|maybe|even|at least|else|if))\b`)
	// gateDescribed: an entity described instead of named ("my May 19
	// flight", "the Vegas flights").
	gateDescribed = mustFast(`\b(?:my|the) (?:[a-z0-9]+ ){0,2}(?:flights?|trips?|reservations?|bookings?|orders?|passengers?|certificates?)\b`)
	// gateConsent: agreeing to a read-back while adding to it.
	gateConsent = mustFast(`^\s*(?:yes|yeah|yep|correct|right|ok|okay|sure)\b[ ,.!]+\S+(?: \S+){2,}`)
	// gateEndRef: a pronoun that ends the turn ("put the money on that",
	// "can you fix that?").
	gateEndRef = mustFast(`\b(?:that|it|this|them|those)\s*[.!?]*\s*$`)
	// gateConcessive: a clause that may take back the other ("fine, but
	// …", "as long as …").
	gateConcessive = mustFast(`\b(?:but|as long as|although|though|even though|except)\b`)
	// gateVague: an action left to the agent ("can you fix that?").
	gateVague = mustFast(`\b(?:fix|sort out|sort|deal with|handle|take care of|do something about) (?:it|that|this|them)\b`)
	// closing: "that's it", a closing remark rather than a reference.
	closing = mustFast(`\b(?:that'?s|that is) (?:it|all)\b`)
	// gateUpgrade: an upgrade without the cabin it goes to.
	gateUpgrade = mustFast(`\bupgrade\b`)
	cabinWord   = mustFast(`\b(?:business|economy|first|premium|cabin|class)\b`)
	// gateValue: a payment or option value the tools may not take.
	gateValue = mustFast(`\b(?:cash|wire|bank|store credit|new card|new gift card|apple|google|venmo|zelle|crypto|bitcoin|premium|first class|plan|multi|segment|leg|size|gb|tb|\d+ ?(?:gb|tb)|xxl|xxxl|for a pair|instead of)\b`)
	// gateOr: any alternative joined by "or" ("cancel it or push it back").
	gateOr = mustFast(`\b[a-z']+ or (?:just |maybe |even |else |to |you |i |we )?[a-z']+`)
	// gateHandedOver: the choice left to the agent in other words ("you
	// pick", "update everything you need to").
	gateHandedOver = mustFast(`\b(?:you (?:pick|choose|decide)|your (?:call|choice)|(?:everything|anything|whatever) (?:you|that) (?:need|needs|think|want)|as you see fit|dealer'?s choice)\b`)
	// gateClock: a clock time without am/pm or a 24-hour form ("the 5
	// o'clock flight", "at 7").
	gateClock = mustFast(`\b(?:\d{1,2} ?o'?clock|(?:at|around|about|the|by) \d{1,2}(?::[0-5]\d)?(?: ?(?:flight|one|departure)|\s*[,.!?]|\s*$| in the| tomorrow| tonight| on))`)
	// gateOther: a third person the request may add or touch (a passenger
	// count, "his" among several passengers).
	gateOther = mustFast(`\b(?:my (?:wife|husband|partner|son|daughter|kids?|children|child|mom|mother|dad|father|friend|sister|brother|colleague|family|parents)|he|she|his|her|him|they|their)\b`)
	// gateRef: a reference anywhere in the turn, not only at its end.
	gateRef = mustFast(`\b(?:(?:that|this|the other|which|the same) ones?|(?:to|on|for|with|from|of|in) (?:it|that|this|them|those|these)|the other)\b`)
	// gateUnwanted: a wish without the action that fulfils it ("I don't
	// want my thermostat anymore": cancel, remove or return?).
	gateUnwanted = mustFast(`\b(?:don'?t|do not|no longer) (?:want|need)\b`)
	// gateValueOne: an option asked for by a value and unit ("a 2 liter
	// one", "the 50ft version"), which the product may not have.
	gateValueOne = mustFast(`\b(?:a|an|the) \d+(?:\.\d+)? ?[a-z]+ (?:one|version|model)\b`)
	// gateRelativeOne: "the one I moved to", a "one" the turn describes
	// only by what the user did.
	gateRelativeOne = mustFast(`\bthe ones? (?:i|we|you) [a-z]+`)
	// gateThen: a chain of legs ("… then LAX to SEA, then …").
	gateThen = mustFast(`\bthen (?:from )?[a-z]+ (?:to|back to) [a-z]+`)
)

// looseCheck is the gate's judgement once the unsupported checks found
// nothing: each precise signal without the step that resolves it, read
// from the user turn alone, so the gate needs no context: it holds back a
// turn whatever was said before. It
// returns the type the signal points at and its location.
func (m *Module) looseCheck(dr *domainRules, in inception.Input, lower string, sc *textScan) (string, []int) {
	text := in.Dialogue[len(in.Dialogue)-1].Text
	if dr != nil {
		if loc := findAny(dr.gate, lower, sc); loc != nil {
			return inception.TypeUnsupportedAction, loc
		}
	}
	if loc := gateValue.FindStringIndex(lower); loc != nil {
		return inception.TypeUnsupportedParameter, loc
	}
	// A provider's own ambiguity types: their cues read the turn alone.
	for _, et := range m.ambiguous {
		if loc := findAny(m.cues[et.Name], lower, sc); loc != nil && !defaultAmbiguity[et.Name] {
			return et.Name, loc
		}
	}
	// Contradiction: any conflict signal, claims about what was said
	// before and denials included (a correction marker alone is not one:
	// corrections are allowed).
	if loc := claimRef.FindStringIndex(lower); loc != nil {
		return inception.TypeContradiction, loc
	}
	if loc := denial.FindStringIndex(lower); loc != nil {
		return inception.TypeContradiction, loc
	}
	for _, check := range []func(string) []int{exceptAlso, soloAndCounted, oppositeActions, selfNegated} {
		if loc := check(lower); loc != nil {
			return inception.TypeContradiction, loc
		}
	}
	if loc := oneWayThenReturn(in, lower); loc != nil {
		return inception.TypeContradiction, loc // the user's turns only
	}
	// What the user ruled out or counted in an earlier turn of theirs
	// ("I have no gift card" … "charge it to my gift card"): the precise
	// check, which reads the user's turns only.
	if loc := againstEarlier(m.memo, in, lower); loc != nil {
		return inception.TypeContradiction, loc
	}
	// As in precise mode, a conflict that follows a correction ("on second
	// thought, don't cancel. I'll keep it") is the correction itself.
	corrected := correction.FindStringIndex(lower)
	for _, re := range []*fastRE{consentThenRefusal, keepVs, bothAndOne} {
		if loc := re.FindStringIndex(lower); loc != nil && (corrected == nil || loc[0] < corrected[0]) {
			return inception.TypeContradiction, loc
		}
	}
	// "don't V": a conflict only next to V asked for, or to a consent
	// (what the agent proposed); a refusal alone ("please don't cancel
	// anything, just tell me the refund") or a withdrawal ("on second
	// thought, don't cancel") is a clear wish.
	if m := negatedVerb.FindStringSubmatchIndex(lower); m != nil && !correction.MatchString(lower) {
		v := lower[m[2]:m[3]]
		if affirmed(lower[:m[0]]+" "+lower[m[1]:], v) || consentStart.MatchString(lower) {
			return inception.TypeContradiction, m[:2]
		}
	}
	if loc := gateConcessive.FindStringIndex(lower); loc != nil && actionVerb.MatchString(lower) {
		return inception.TypeContradiction, loc
	}
	if loc := gateConsent.FindStringIndex(lower); loc != nil && !closing.MatchString(lower) && !thanksOnly(lower[loc[0]:]) {
		return inception.TypeContradiction, loc
	}
	if loc := confirmStart.FindStringIndex(lower); loc != nil && number.MatchString(lower) {
		return inception.TypeContradiction, loc // a read-back confirmed with a value
	}
	// Multiple interpretation: any two actions or open choice.
	if loc := verbOrVerb.FindStringIndex(lower); loc != nil {
		return inception.TypeMultipleInterpretation, loc
	}
	// One criterion alone ("whichever is cheaper") is settled by the facts.
	if loc := openChoice.FindStringIndex(lower); loc != nil && !singleCriterion.MatchString(sentenceAround(lower, loc[0], loc[1])) {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := twoCriteria(lower); loc != nil {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateAlternative.FindStringIndex(lower); loc != nil && !singleCriterion.MatchString(sentenceAround(lower, loc[0], loc[1])) {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateUpgrade.FindStringIndex(lower); loc != nil && !cabinWord.MatchString(sentenceAround(lower, loc[0], loc[1])) {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := comparativeChoice.FindStringIndex(lower); loc != nil {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateVague.FindStringIndex(lower); loc != nil {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateHandedOver.FindStringIndex(lower); loc != nil {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateClock.FindStringIndex(lower); loc != nil {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateOr.FindStringIndex(lower); loc != nil {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateThen.FindStringIndex(lower); loc != nil {
		return inception.TypeUnsupportedParameter, loc
	}
	if loc := gateValueOne.FindStringIndex(lower); loc != nil {
		return inception.TypeUnsupportedParameter, loc
	}
	if loc := gateUnwanted.FindStringIndex(lower); loc != nil && !actionVerb.MatchString(lower) {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateRelativeOne.FindStringIndex(lower); loc != nil {
		return inception.TypeAnaphora, loc
	}
	if dr != nil {
		if loc := twoEnumValues(m.catalogRules(in.Domain, dr, in.Tools), lower); loc != nil {
			return inception.TypeContradiction, loc
		}
	}
	named := idInTurn(dr, text)
	if loc := gateDescribed.FindStringIndex(lower); loc != nil && !named && !wholeOrCurrent(lower[loc[0]:loc[1]]) {
		return inception.TypeMultipleInterpretation, loc
	}
	if loc := gateOther.FindStringIndex(lower); loc != nil && !named {
		return inception.TypeAnaphora, loc
	}
	if loc := gateRef.FindStringIndex(lower); loc != nil && !named {
		return inception.TypeAnaphora, loc
	}
	// Anaphora: any reference the turn leaves open.
	if refs := openRefs(dr, text, lower); len(refs) > 0 {
		return inception.TypeAnaphora, refs[0]
	}
	if ms := openProperties(lower); len(ms) > 0 && !named {
		return inception.TypeAnaphora, ms[0][:2]
	}
	if loc := gateEndRef.FindStringIndex(lower); loc != nil && !named && !closing.MatchString(lower) {
		return inception.TypeAnaphora, loc
	}
	return "", nil
}

// defaultAmbiguity are the ambiguity types the rules judge with their own
// checks rather than the taxonomy's cues.
var defaultAmbiguity = map[string]bool{inception.TypeAnaphora: true, inception.TypeMultipleInterpretation: true, inception.TypeContradiction: true}

// actionVerb: a request that changes data.
var actionVerb = mustFast(`\b(?:` + actionVerbs + `)\b`)

func hasUserTurn(dialogue []inception.Utterance) bool {
	for _, u := range dialogue {
		if u.Role == inception.RoleUser {
			return true
		}
	}
	return false
}

// twoEnumValues finds two different values of one enum parameter of the
// agent's tools in one turn ("the cheapest economy fare but … business
// class"): a conflict or a choice between them, or a plain change from
// one to the other, which the model tells apart.
func twoEnumValues(cr *catalogRules, lower string) []int {
	for _, vals := range cr.enums {
		first := -1
		var seen string
		for _, v := range vals {
			i := inception.WordIndex(lower, v)
			if i < 0 || strings.Contains(seen, v) {
				continue
			}
			if first >= 0 {
				return []int{min(first, i), max(first, i) + len(v)}
			}
			first, seen = i, v
		}
	}
	return nil
}

// wholeOrCurrent reports a described entity that picks itself whatever
// else is in play ("the whole order", "the current booking").
func wholeOrCurrent(phrase string) bool {
	for _, w := range strings.Fields(phrase) {
		switch w {
		case "whole", "entire", "current", "same", "cancelled", "canceled", "original", "existing",
			// a rank picks one whatever is listed ("the earliest flight",
			// "the 2nd order")
			"first", "second", "third", "1st", "2nd", "3rd", "last", "earliest", "latest", "cheapest":
			return true
		}
	}
	return false
}

// thanksOnly reports a consent followed only by thanks ("yes paypal is
// ok. thank you"): agreement, nothing added to take back.
func thanksOnly(s string) bool {
	i := strings.IndexAny(s, ".!")
	if i < 0 {
		return false
	}
	rest := strings.TrimSpace(s[i+1:])
	return strings.HasPrefix(rest, "thank") || strings.HasPrefix(rest, "thx")
}
