package inception

import (
	"strings"
)

// Anaphora: a pronoun, demonstrative or "one"-substitute whose antecedent
// is not unique. The rules module finds the reference in the user turn,
// then counts the candidate entities of the kind in play (what the agent
// just listed, in prose, bullets or a summarised tool result), whatever
// the agent asked.

// refVerb is a verb or preposition that takes an entity as its object.
const refVerb = `cancel|change|modify|return|exchange|refund|upgrade|downgrade|rebook|remove|switch|update|move|book|swap|put|add|ship|send|use|go with|status of`

// pronounRef matches a pronoun or demonstrative used as an entity
// reference: after a verb or preposition, or a "one" substitute anywhere.
var pronounRef = mustFast(`\b(?:(?:` + refVerb + `) (?:it|them|that|this|those|these|his|hers|her)(?: (?:one|ones|two|three|four))?|(?:that|this|the other) ones?|the other\b[.,!?]|(?:these|those)(?: two| three| ones)?|(?:` + refVerb + `) (?:that|those) (?:reservations?|bookings?|flights?|trips?|tickets?|orders?|items?|products?|packages?))\b`)

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
	"trip": false, "help": true, "issue": true, "problem": true, "status": true, "agent": true, "human": true,
	"card": true, "address": true, "policy": true, "fee": true, "fees": true, "week": true, "weekend": true,
}

// anaphora reports an unresolved reference and its location.
func anaphora(dr *domainRules, in Input, lower string) []int {
	earlier := in.Dialogue[:len(in.Dialogue)-1]
	// A "the X one" whose property several listed entities share.
	for _, m := range findAllIf(strings.Contains(lower, " one"), theXOne, lower) {
		prop := lower[m[2]:m[3]]
		if prop == "other" || resolvingWords[firstWord(prop)] || descriptorAfter.MatchString(lower[m[1]:]) || len(earlier) == 0 {
			continue
		}
		c := inPlay(dr, earlier, "")
		if len(c.spans) >= 2 && c.matching(prop) >= 2 {
			return m[:2]
		}
	}
	for _, loc := range pronounRef.FindAllStringIndex(lower, -1) {
		ref := lower[loc[0]:loc[1]]
		if notAReference.MatchString(lower[loc[1]:]) || descriptorAfter.MatchString(lower[loc[1]:]) {
			continue
		}
		if (strings.HasSuffix(ref, " that") || strings.HasSuffix(ref, " this")) && strings.HasPrefix(lower[loc[1]:], " ") && !endsReference(lower[loc[1]:]) {
			continue // "for that reason", "about that price"
		}
		if idInTurn(dr, in.Dialogue[len(in.Dialogue)-1].Text) || strings.Contains(lower[:loc[0]], " one") && theXOne.MatchString(lower[:loc[0]]) || inTurnDetail.MatchString(lower[:loc[0]]) {
			return nil // the user names or describes the entity
		}
		if plural(ref) && wholeSet.MatchString(lower[:loc[0]]) {
			continue // the whole set
		}
		if (strings.HasPrefix(ref, "these") || strings.HasPrefix(ref, "those")) && !endsReference(lower[loc[1]:]) && !strings.Contains(ref, " ") {
			continue // "those options", "these changes": not an entity
		}
		noun := antecedentNoun(lower[:loc[0]])
		if len(earlier) == 0 {
			if noun != "" {
				return nil // "I booked a flight … cancel it"
			}
			return loc // nothing said before: nothing to refer to
		}
		c := inPlay(dr, earlier, refKind(ref))
		if noun != "" {
			// "the kettle … cancel it": the antecedent is the noun, ambiguous
			// only if several listed entities are that noun; a plural names
			// them all.
			if !plural(ref) && len(c.spans) >= 2 && c.matching(noun) >= 2 {
				return loc
			}
			return nil
		}
		n := c.count()
		switch {
		case strings.Contains(ref, "the other"):
			if n != 2 {
				return loc
			}
		case plural(ref):
			if n > 2 && !strings.Contains(ref, "two") || strings.Contains(ref, "two") && n > 2 {
				return loc
			}
		case n >= 2:
			return loc
		}
	}
	return nil
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

// antecedentNoun returns the head noun of the last noun phrase before the
// pronoun, singular, or "".
func antecedentNoun(before string) string {
	ms := inTurnNoun.FindAllStringSubmatch(before, -1)
	for i := len(ms) - 1; i >= 0; i-- {
		words := strings.Fields(ms[i][1])
		for len(words) > 1 && functionWord[words[len(words)-1]] {
			words = words[:len(words)-1]
		}
		noun := strings.TrimSuffix(words[len(words)-1], "s")
		if len(noun) < 3 || antecedentStop[noun] || antecedentStop[words[len(words)-1]] || stopNoun[noun] {
			continue
		}
		return noun
	}
	return ""
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
		if !idShaped(tok) {
			if tok = strings.ToUpper(tok); !strings.ContainsAny(tok, "0123456789") {
				return
			}
		}
		if found || !idShaped(tok) {
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
// any, scanning back over agent messages only (the user's own words do not
// put entities in play for a pronoun of theirs).
func inPlay(dr *domainRules, earlier []Utterance, kind string) candidates {
	var last candidates
	seen := 0
	for i := len(earlier) - 1; i >= 0 && seen < 3; i-- {
		if earlier[i].Role != RoleAgent {
			continue
		}
		seen++
		c := agentCandidates(dr, earlier[i].Text, kind)
		if seen == 1 {
			last = c
		}
		if c.count() > 0 {
			return c
		}
	}
	return last
}
