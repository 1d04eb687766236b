package rules

import (
	"strconv"
	"strings"

	"github.com/reinception/rein/inception"
)

// Passenger counts (contradiction): the number of travellers the user
// states against the people they name or count, in the same turn ("me and
// my 2 kids, so 2 passengers total") or against an earlier turn ("just
// the two of us" … three names with dates of birth; "just me" … "put my
// husband on it as well"). A correction ("actually", "sorry, make that")
// replaces the earlier count and is allowed.

var (
	// statedTotal: a number of travellers stated outright.
	statedTotal = mustFast(`\b(\d|one|two|three|four|five|six)\s+(?:passengers?|people|persons|travell?ers|adults|tickets|seats|of us)\b|\b(?:in )?total(?: of)?\s+(\d|one|two|three|four|five|six)\s*(?:[,.!?;]|$)|\b(?:just|only) (?:the )?(two|three|four) of us\b|\b(both) of us\b`)
	// statedSolo: one traveller.
	statedSolo = mustFast(`\b(?:just me|only me|(?:just|only) myself|by myself|solo|alone|one passenger|1 passenger)\b`)
	// selfIncluded: the user counts themself in the party.
	selfIncluded = mustFast(`\b(?:me and|and me|myself and|and myself|me,|i and|i'?m (?:flying|travell?ing|going|coming) with|(?:for|with) me)\b`)
	// relativeCount: "my two kids", "my wife", "our son".
	relativeCount = mustFast(`\b(?:my|our) (?:(\d|one|two|three|four|five) )?(husband|wife|partner|friend|son|daughter|kid|child|children|mom|dad|mother|father|brother|sister|colleague|boss|boyfriend|girlfriend|fiancee?)(s|'s)?\b`)
	// personAdded: a person put on the booking now.
	personAdded = mustFast(`\b(?:put|add|include|book|bring|booking)\s+(?:my|our) (husband|wife|partner|friend|son|daughter|kid|mom|dad|mother|father|brother|sister|colleague|boss|boyfriend|girlfriend)\b[^.!?]*?\b(?:too|as well|also|on it|on the|to the|to it|with me)\b|\b(?:my|our) (husband|wife|partner|friend|son|daughter|kid|mom|dad|mother|father|brother|sister|colleague|boss|boyfriend|girlfriend)(?:'s (?:name|details|ticket))?[^.!?]*?\b(?:too|as well)\b`)
	// birthDate: a date of birth as passengers are listed.
	birthDate = mustFast(`\b(?:19|20)\d\d-\d\d-\d\d\b`)
	// pluralRelative: a group whose size is not said ("my kids").
	pluralRelative = map[string]bool{"kid": true, "child": true, "children": true, "friend": true, "colleague": true}
)

var smallNumbers = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "both": 2}

func smallNumber(s string) int {
	if n, ok := smallNumbers[s]; ok {
		return n
	}
	n, _ := strconv.Atoi(s)
	return n
}

// partyTotal is the number of travellers the text states, and where; 0
// when it states none.
func partyTotal(lower string) (int, []int) {
	if m := statedTotal.FindStringSubmatchIndex(lower); m != nil {
		for g := 1; g < len(m)/2; g++ {
			if m[2*g] >= 0 {
				return smallNumber(lower[m[2*g]:m[2*g+1]]), m[:2]
			}
		}
	}
	if loc := statedSolo.FindStringIndex(lower); loc != nil && !negatedBefore(lower, loc[0]) {
		return 1, loc
	}
	return 0, nil
}

// partyNamed is the number of travellers the text enumerates ("me and my
// two kids" is three), 0 when it enumerates none or a group of unsaid size.
func partyNamed(lower string) (int, []int) {
	self := selfIncluded.FindStringIndex(lower)
	if self == nil {
		return 0, nil
	}
	n, loc := 1, []int{self[0], self[1]}
	for _, m := range relativeCount.FindAllStringSubmatchIndex(lower, -1) {
		k := 1
		if m[2] >= 0 {
			k = smallNumber(lower[m[2]:m[3]])
		} else if rel := lower[m[4]:m[5]]; pluralRelative[rel] && (m[6] >= 0 && lower[m[6]:m[7]] == "s" || rel == "children") {
			return 0, nil // "my kids": how many is not said
		}
		n += k
		loc[0], loc[1] = min(loc[0], m[0]), max(loc[1], m[1])
	}
	if n == 1 {
		return 0, nil // only the user: a total says that better
	}
	return n, loc
}

// countConflict finds a passenger count that conflicts with the people
// counted in the same turn or with a count of an earlier user turn.
func countConflict(mm *memo, in inception.Input, lower string) []int {
	var total, named int
	var tloc, nloc []int
	if f := mm.user(in.Dialogue[len(in.Dialogue)-1].Text); f.lower == lower {
		total, tloc, named, nloc = f.total, f.tloc, f.named, f.nloc
	} else {
		total, tloc = partyTotal(lower)
		named, nloc = partyNamed(lower)
	}
	dates := birthDate.FindAllStringIndex(lower, -1)
	added := personAdded.FindStringSubmatchIndex(lower)
	if total == 0 && named == 0 && len(dates) < 2 && added == nil {
		return nil // the turn counts no one: nothing to compare
	}
	corrected := hasCorrection(lower)
	if total > 0 && named > 0 && total != named && !corrected {
		return []int{min(tloc[0], nloc[0]), max(tloc[1], nloc[1])}
	}
	// The earlier count: the latest user turn that states or enumerates one.
	earlier, earlierText := 0, ""
	for i := len(in.Dialogue) - 2; i >= 0 && earlier == 0; i-- {
		u := in.Dialogue[i]
		if u.Role != inception.RoleUser {
			continue
		}
		prev := mm.user(u.Text)
		earlier, earlierText = prev.party, prev.lower
	}
	if earlier == 0 || corrected {
		return nil
	}
	now, loc := total, tloc
	if now == 0 {
		now, loc = named, nloc
	}
	if now > 0 && now != earlier {
		return []int{loc[0], loc[1]} // a copy: the memo's spans are shared
	}
	// Passengers listed with their dates of birth, more than were counted.
	if len(dates) > earlier && len(dates) >= 2 && strings.Contains(mm.agent(lastAgent(in.Dialogue[:len(in.Dialogue)-1])).lower, "passenger") {
		return []int{dates[0][0], dates[len(dates)-1][1]}
	}
	// A person added to a party the user said was smaller.
	if m := added; m != nil {
		rel := ""
		for g := 1; g < len(m)/2; g++ {
			if m[2*g] >= 0 {
				rel = lower[m[2*g]:m[2*g+1]]
			}
		}
		if rel != "" && inception.WordIndex(earlierText, rel) < 0 && (earlier == 1 || !mentionedBefore(mm, in, rel)) {
			return m[:2]
		}
	}
	return nil
}

// mentionedBefore reports a word in any earlier user turn.
func mentionedBefore(mm *memo, in inception.Input, w string) bool {
	for _, u := range in.Dialogue[:len(in.Dialogue)-1] {
		if u.Role == inception.RoleUser && inception.WordIndex(mm.user(u.Text).lower, w) >= 0 {
			return true
		}
	}
	return false
}

// Sizes asked for against the way the user said the size should go: "it's
// huge on me, a smaller size … let's go with XL" for a size L item.

var (
	sizeDown = mustFast(`\b(?:smaller|a size down|size down|too (?:big|large|loose|long|wide)|huge on me|way too big)\b`)
	sizeUp   = mustFast(`\b(?:bigger|larger|a size up|size up|too (?:small|tight|short|narrow)|pinch(?:es)?)\b`)
	// sizeNamed: a size named in a sentence ("size L", "an XXL", "a 10").
	sizeNamed  = mustFast(`\bsize\s+(?:an?\s+)?(x{0,4}[sl]|m|\d{1,2}(?:\.5)?)\b|\b(xs|x{1,4}l)\b`)
	letterRank = map[string]float64{"xs": 1, "s": 2, "m": 3, "l": 4, "xl": 5, "xxl": 6, "xxxl": 7, "xxxxl": 8}
)

// sizeRank orders a size token; ok is false for no size.
func sizeRank(tok string) (float64, bool) {
	if r, ok := letterRank[tok]; ok {
		return r, true
	}
	n, err := strconv.ParseFloat(tok, 64)
	return n, err == nil
}

// sizesIn returns the sizes a text names, in order, with their spans.
func sizesIn(lower string) (ranks []float64, locs [][]int) {
	for _, m := range sizeNamed.FindAllStringSubmatchIndex(lower, -1) {
		g := 2
		if m[2] < 0 {
			g = 4
		}
		if r, ok := sizeRank(lower[m[g]:m[g+1]]); ok {
			ranks, locs = append(ranks, r), append(locs, m[:2])
		}
	}
	return ranks, locs
}

// sizeAgainstDirection finds a size asked for that goes the other way from
// the one the user said the item needs, measured from the size the agent
// last stated.
func sizeAgainstDirection(in inception.Input, lower string) []int {
	if !hasAny(lower, "size", "xl", "xs") || hasCorrection(lower) {
		return nil
	}
	target, tlocs := sizesIn(lower)
	if len(target) == 0 {
		return nil
	}
	earlier := in.Dialogue[:len(in.Dialogue)-1]
	current, _ := sizesIn(strings.ToLower(lastAgent(earlier)))
	if len(current) != 1 {
		return nil // none stated, or several items' sizes
	}
	dir := 0
	for i := len(in.Dialogue) - 1; i >= 0 && dir == 0 && i >= len(in.Dialogue)-4; i-- {
		if in.Dialogue[i].Role != inception.RoleUser {
			continue
		}
		t := strings.ToLower(in.Dialogue[i].Text)
		down, up := sizeDown.MatchString(t), sizeUp.MatchString(t)
		switch {
		case down && !up:
			dir = -1
		case up && !down:
			dir = 1
		}
	}
	want, loc := target[len(target)-1], tlocs[len(tlocs)-1]
	if dir < 0 && want > current[0] || dir > 0 && want < current[0] {
		return loc
	}
	return nil
}

// sizeAsked reports a size named in the turn, which sizeAgainstDirection
// judges against the size the agent stated.
func sizeAsked(lower string) bool {
	if !hasAny(lower, "size", "xl", "xs") {
		return false
	}
	r, _ := sizesIn(lower)
	return len(r) > 0
}
