package inception

// The cascade's gate (RulesRecall) sends a turn to the model when the
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
	// closing: "that's it", a closing remark rather than a reference.
	closing = mustFast(`\b(?:that'?s|that is) (?:it|all)\b`)
	// gateUpgrade: an upgrade without the cabin it goes to.
	gateUpgrade = mustFast(`\bupgrade\b`)
	cabinWord   = mustFast(`\b(?:business|economy|first|premium|cabin|class)\b`)
	// gateValue: a payment or option value the tools may not take.
	gateValue = mustFast(`\b(?:cash|wire|bank|store credit|new card|new gift card|apple|google|venmo|zelle|crypto|bitcoin|premium|first class|plan|multi|segment|leg|size|gb|tb|xxl|xxxl|for a pair|instead of)\b`)
)

// looseCheck is the gate's judgement once the unsupported checks found
// nothing: each precise signal without the step that resolves it, read
// from the user turn alone, so the gate needs no context: it holds back a
// turn whatever was said before. It
// returns the type the signal points at and its location.
func (m *RulesModule) looseCheck(dr *domainRules, in Input, lower string, bg *bigrams) (string, []int) {
	text := in.Dialogue[len(in.Dialogue)-1].Text
	if dr != nil {
		if loc := findAny(dr.gate, lower, bg); loc != nil {
			return TypeUnsupportedAction, loc
		}
	}
	if loc := gateValue.FindStringIndex(lower); loc != nil {
		return TypeUnsupportedParameter, loc
	}
	// A provider's own ambiguity types: their cues read the turn alone.
	for _, et := range m.ambiguous {
		if loc := findAny(m.cues[et.Name], lower, bg); loc != nil && !defaultAmbiguity[et.Name] {
			return et.Name, loc
		}
	}
	// Contradiction: any conflict signal, claims about what was said
	// before and denials included (a correction marker alone is not one:
	// corrections are allowed).
	if loc := claimRef.FindStringIndex(lower); loc != nil {
		return TypeContradiction, loc
	}
	if loc := denial.FindStringIndex(lower); loc != nil {
		return TypeContradiction, loc
	}
	for _, re := range []*fastRE{consentThenRefusal, keepVs, bothAndOne, negatedVerb} {
		if loc := re.FindStringIndex(lower); loc != nil {
			return TypeContradiction, loc
		}
	}
	if loc := gateConcessive.FindStringIndex(lower); loc != nil && actionVerb.MatchString(lower) {
		return TypeContradiction, loc
	}
	if loc := gateConsent.FindStringIndex(lower); loc != nil {
		return TypeContradiction, loc
	}
	if loc := confirmStart.FindStringIndex(lower); loc != nil && number.MatchString(lower) {
		return TypeContradiction, loc // a read-back confirmed with a value
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
	if loc := comparativeChoice.FindStringIndex(lower); loc != nil {
		return TypeMultipleInterpretation, loc
	}
	if loc := gateVague.FindStringIndex(lower); loc != nil {
		return TypeMultipleInterpretation, loc
	}
	named := idInTurn(dr, text)
	if loc := gateDescribed.FindStringIndex(lower); loc != nil && !named {
		return TypeMultipleInterpretation, loc
	}
	// Anaphora: any reference the turn leaves open.
	if refs := openRefs(dr, text, lower); len(refs) > 0 {
		return TypeAnaphora, refs[0]
	}
	if ms := openProperties(lower); len(ms) > 0 {
		return TypeAnaphora, ms[0][:2]
	}
	if loc := gateEndRef.FindStringIndex(lower); loc != nil && !named && !closing.MatchString(lower) {
		return TypeAnaphora, loc
	}
	return "", nil
}

// defaultAmbiguity are the ambiguity types the rules judge with their own
// checks rather than the taxonomy's cues.
var defaultAmbiguity = map[string]bool{TypeAnaphora: true, TypeMultipleInterpretation: true, TypeContradiction: true}

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
