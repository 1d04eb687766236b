package inception

import (
	"strings"
)

// The cascade's gate (RulesRecall) sends a turn to the model when the
// precise checks fire or when a looser version of one of them does. A turn
// it holds back never reaches the model, so the loose checks favour
// recall: a clean turn let through costs one model call, an erroneous one
// held back is lost. Each loose check keeps the signal of its precise
// counterpart and drops the step that resolves it.

var (
	// gateAlternative: an open choice or an alternative of any kind.
	gateAlternative = mustFast(`\b(?:either|whichever|whatever|however|up to you|not sure|or (?:just|maybe|even|at least|else|if))\b`)
	// gateComparative: a relative property ("a darker one", "but
	// quieter") that several options may have.
	gateComparative = mustFast(`\b(?:darker|lighter|brighter|quieter|louder|bigger|smaller|larger|cheaper|faster|slower|earlier|later|longer|shorter|nicer|better)\b`)
	// gateDescribed: an entity described instead of named ("my May 19
	// flight", "the Vegas flights").
	gateDescribed = mustFast(`\b(?:my|the) (?:[a-z0-9]+ ){1,2}(?:flights?|trips?|reservations?|bookings?|orders?)\b`)
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
	// gateUpgrade: an upgrade without the cabin it goes to.
	gateUpgrade = mustFast(`\bupgrade\b`)
	cabinWord   = mustFast(`\b(?:business|economy|first|premium|cabin|class)\b`)
	// gateValue: a payment or option value the tools may not take.
	gateValue = mustFast(`\b(?:cash|wire|bank|store credit|new card|new gift card|apple|google|venmo|zelle|crypto|bitcoin|premium|first class|plan|multi|segment|leg|size|gb|tb|xxl|xxxl|for a pair|instead of)\b`)
)

// looseCheck is the gate's looser judgement once the precise checks found
// nothing: each precise signal without the step that resolves it. It
// returns the type the signal points at and its location.
func (m *RulesModule) looseCheck(dr *domainRules, in, near Input, lower string, bg *bigrams) (string, []int) {
	earlier := in.Dialogue[:len(in.Dialogue)-1]
	nearby := near.Dialogue[:len(near.Dialogue)-1] // the window references look in
	text := in.Dialogue[len(in.Dialogue)-1].Text
	if dr != nil {
		if loc := findAny(dr.gate, lower, bg); loc != nil {
			return TypeUnsupportedAction, loc
		}
	}
	if loc := gateValue.FindStringIndex(lower); loc != nil {
		return TypeUnsupportedParameter, loc
	}
	// Contradiction: any conflict signal, corrections included.
	for _, re := range []*fastRE{consentThenRefusal, keepVs, bothAndOne, negatedVerb} {
		if loc := re.FindStringIndex(lower); loc != nil {
			return TypeContradiction, loc
		}
	}
	if loc := correction.FindStringIndex(lower); loc != nil && hasUserTurn(earlier) {
		return TypeContradiction, loc
	}
	for _, mm := range notThing.FindAllStringSubmatchIndex(lower, -1) {
		if !hasUserTurn(earlier) {
			break
		}
		if thing := lastWordOf(lower[mm[2]:mm[3]]); len(thing) >= 4 && !contradictionWords[thing] && !stopNoun[thing] {
			return TypeContradiction, mm[:2]
		}
	}
	if loc := againstEarlier(in, lower); loc != nil {
		return TypeContradiction, loc
	}
	if loc := gateConcessive.FindStringIndex(lower); loc != nil && actionVerb.MatchString(lower) {
		return TypeContradiction, loc
	}
	if loc := gateConsent.FindStringIndex(lower); loc != nil && hasUserTurn(earlier) {
		return TypeContradiction, loc
	}
	// Multiple interpretation: any two actions or open choice.
	if loc := verbOrVerb.FindStringIndex(lower); loc != nil {
		return TypeMultipleInterpretation, loc
	}
	if loc := openChoice.FindStringIndex(lower); loc != nil {
		return TypeMultipleInterpretation, loc
	}
	if loc := gateAlternative.FindStringIndex(lower); loc != nil {
		return TypeMultipleInterpretation, loc
	}
	if loc := gateUpgrade.FindStringIndex(lower); loc != nil && !cabinWord.MatchString(sentenceAround(lower, loc[0], loc[1])) {
		return TypeMultipleInterpretation, loc
	}
	if loc := gateComparative.FindStringIndex(lower); loc != nil && len(earlier) > 0 {
		return TypeMultipleInterpretation, loc
	}
	if loc := gateVague.FindStringIndex(lower); loc != nil {
		return TypeMultipleInterpretation, loc
	}
	named := idInTurn(dr, text)
	if loc := gateDescribed.FindStringIndex(lower); loc != nil && !named {
		return TypeMultipleInterpretation, loc
	}
	if last := lastAgent(earlier); last != "" {
		agent := strings.ToLower(last)
		for _, np := range bareNouns(lower) {
			if !bareNounStop[np.noun] && countWord(agent, np.noun) >= 2 {
				return TypeMultipleInterpretation, []int{np.start, np.end}
			}
		}
	}
	// Anaphora: any reference the turn does not name.
	if named {
		return "", nil
	}
	loc := pronounRef.FindStringIndex(lower)
	if loc == nil {
		loc = gateEndRef.FindStringIndex(lower)
	}
	if loc != nil && (len(earlier) == 0 || strings.Contains(lower[loc[0]:loc[1]], "one") || strings.Contains(lower[loc[0]:loc[1]], "other") || inPlay(dr, nearby, "").count() != 1) {
		return TypeAnaphora, loc
	}
	for _, mm := range theXOne.FindAllStringSubmatchIndex(lower, -1) {
		prop := lower[mm[2]:mm[3]]
		if resolvingWords[firstWord(prop)] || prop == "other" || len(earlier) == 0 {
			continue
		}
		if c := inPlay(dr, nearby, ""); c.count() >= 2 && c.matching(prop) != 1 {
			return TypeAnaphora, mm[:2]
		}
	}
	return "", nil
}

// actionVerb: a request that changes data.
var actionVerb = mustFast(`\b(?:` + actionVerbs + `)\b`)

func hasUserTurn(dialogue []Utterance) bool {
	for _, u := range dialogue {
		if u.Role == RoleUser {
			return true
		}
	}
	return false
}
