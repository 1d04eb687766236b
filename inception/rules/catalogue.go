package rules

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/reinception/rein/inception"

	"github.com/reinception/rein/internal/llm"
)

// What the agent's tool catalogue can do, read from its names, descriptions
// and JSON Schemas: which operations it covers and which values a parameter
// takes.

// coveredActions marks the domain's unsupported operations that a tool of
// the catalogue names in its name or description (a tenant whose tools can
// pick seats): asking for them is then no tool gap.
func coveredActions(dr *domainRules, tools []llm.Tool) []bool {
	out := make([]bool, len(dr.actions))
	var words []string
	for _, t := range tools {
		words = append(words, strings.ToLower(strings.ReplaceAll(t.Name, "_", " ")+" "+t.Description))
	}
	for i, a := range dr.actions {
		for _, obj := range a.objects {
			for _, w := range words {
				if inception.WordIndex(w, strings.ToLower(obj)) >= 0 {
					out[i] = true
				}
			}
		}
	}
	return out
}

// buildCatalogRules compiles, per parameter note the catalogue has, the
// phrases naming a value outside what the parameter takes.
func buildCatalogRules(dr *domainRules, tools []llm.Tool) *catalogRules {
	cr := &catalogRules{}
	for i, p := range dr.params {
		enum, kinds, present := toolEnum(tools, p.Parameter)
		if !present {
			continue // the agent's tools have no such parameter
		}
		allowed := map[string]bool{}
		for _, v := range enum {
			allowed[v] = true
		}
		if len(enum) == 0 {
			// No enum: the id kinds the descriptions show, and the
			// note's own list.
			for _, v := range append(kinds, p.Allowed...) {
				allowed[v] = true
			}
		}
		if len(allowed) == 0 {
			continue // nothing to compare against
		}
		phrases := make([]string, 0, len(p.Values))
		bad := map[string]bool{}
		for phrase, value := range p.Values {
			phrases = append(phrases, strings.ToLower(phrase))
			if !allowed[value] {
				bad[strings.ToLower(phrase)] = true
			}
		}
		if len(bad) == 0 {
			continue
		}
		// Longest phrase first so "basic economy" wins over "economy".
		sort.Slice(phrases, func(a, b int) bool {
			if len(phrases[a]) != len(phrases[b]) {
				return len(phrases[a]) > len(phrases[b])
			}
			return phrases[a] < phrases[b]
		})
		quoted := make([]string, len(phrases))
		for j, ph := range phrases {
			quoted[j] = regexp.QuoteMeta(ph)
		}
		cr.params = append(cr.params, paramRule{
			phrases: compileCue(`\b(?:` + strings.Join(quoted, "|") + `)\b`),
			bad:     bad,
			context: dr.contexts[i],
		})
	}
	return cr
}

// idExample matches a stored-id example in a parameter description
// ("credit_card_1234567", "gift_card_…"): its prefix is a value kind the
// parameter takes.
var idExample = regexp.MustCompile(`\b([a-z]+(?:_[a-z]+)*)_(?:[0-9]{3,}|…|\.\.\.)`)

// toolEnum finds the parameter in the tools' JSON Schemas (at any depth)
// and returns the union of its enums and of the id kinds its descriptions
// give as examples; present reports whether any tool has it.
func toolEnum(tools []llm.Tool, param string) (enum, kinds []string, present bool) {
	for _, t := range tools {
		var doc any
		if json.Unmarshal(t.Parameters, &doc) != nil {
			continue
		}
		walkProps(doc, func(name string, schema map[string]any) {
			if name != param {
				return
			}
			present = true
			if vals, ok := schema["enum"].([]any); ok {
				for _, v := range vals {
					if s, ok := v.(string); ok {
						enum = append(enum, s)
					}
				}
			}
			if d, ok := schema["description"].(string); ok {
				for _, m := range idExample.FindAllStringSubmatch(d, -1) {
					kinds = append(kinds, m[1])
				}
			}
		})
	}
	return enum, kinds, present
}

func walkProps(node any, visit func(string, map[string]any)) {
	obj, ok := node.(map[string]any)
	if !ok {
		return
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		for name, sub := range props {
			if s, ok := sub.(map[string]any); ok {
				visit(name, s)
			}
			walkProps(sub, visit)
		}
	}
	if items, ok := obj["items"]; ok {
		walkProps(items, visit)
	}
}

// toolEnums returns every string enum of the tools' parameters whose
// values read as words (four letters or more; "yes"/"no" are left out),
// each once, underscores as spaces, longest value first so "basic economy"
// is found before "economy".
func toolEnums(tools []llm.Tool) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, t := range tools {
		var doc any
		if json.Unmarshal(t.Parameters, &doc) != nil {
			continue
		}
		walkProps(doc, func(_ string, schema map[string]any) {
			vals, ok := schema["enum"].([]any)
			if !ok {
				return
			}
			var words []string
			for _, v := range vals {
				if s, ok := v.(string); ok && len(s) >= 4 {
					words = append(words, strings.ToLower(strings.ReplaceAll(s, "_", " ")))
				}
			}
			if len(words) < 2 {
				return
			}
			sort.Slice(words, func(a, b int) bool { return len(words[a]) > len(words[b]) })
			if key := strings.Join(words, "|"); !seen[key] {
				seen[key] = true
				out = append(out, words)
			}
		})
	}
	return out
}

func hasTool(tools []llm.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// legWords name one leg of a trip or one segment.
var perLeg = mustFast(`\b(?:leg|legs|segment|segments|outbound|outgoing|inbound|return flight|way back|way there|connecting flight)\b`)

// perLegEnum finds two cabin values in a turn that ties them to legs ("the
// return leg in business, keep the outbound in economy"): the cabin is one
// value for the whole reservation.
func perLegEnum(cr *catalogRules, lower string) []int {
	if len(cr.cabins) < 2 || !perLeg.MatchString(lower) {
		return nil
	}
	lowest := strings.ReplaceAll(cr.cabins[0], "_", " ")
	for _, vals := range cr.enums {
		if !slices.Contains(vals, lowest) {
			continue // not the cabin enum
		}
		if loc := twoEnumValues(&catalogRules{enums: [][]string{vals}}, lower); loc != nil && !hasAny(lower[loc[0]:loc[1]], " from ", " to ", "instead", "upgrade", "downgrade") {
			return loc
		}
	}
	return nil
}

// airportPair: "JFK to LAX".
var airportPair = mustFast(`\b([A-Z]{3}) (?:to|-|->) ([A-Z]{3})\b`)

// airportStarts counts, up to two, the places where an airportPair match
// could start: three capital letters and a space.
func airportStarts(text string) int {
	n, run := 0, 0
	for i := 0; i < len(text) && n < 2; i++ {
		switch c := text[i]; {
		case c >= 'A' && c <= 'Z':
			run++
		case c == ' ' && run >= 3:
			n, run = n+1, 0
		default:
			run = 0
		}
	}
	return n
}

// legChain finds three or more legs in one request ("JFK to LAX, then LAX
// to SEA, then SEA back to JFK") when the trip types are one way and round
// trip: a multi-city trip.
func legChain(cr *catalogRules, text string) []int {
	if len(cr.tripTypes) == 0 || strings.Contains(strings.Join(cr.tripTypes, " "), "multi") {
		return nil
	}
	if airportStarts(text) < 2 {
		return nil // the expression has no literal to prefilter on
	}
	pairs := airportPair.FindAllStringSubmatchIndex(text, -1)
	if len(pairs) < 2 {
		return nil
	}
	seen := map[string]bool{}
	for _, p := range pairs {
		seen[text[p[2]:p[3]]] = true
		seen[text[p[4]:p[5]]] = true
	}
	if len(seen) < 3 {
		return nil // there and back
	}
	// Two legs through a third airport are one connecting trip ("HAT083
	// from JFK to SEA and HAT258 from SEA to SFO") unless the user chains
	// them as separate stops.
	lower := strings.ToLower(text)
	if len(pairs) < 3 && (!strings.Contains(lower, "then") || hasAny(lower, "stop", "connect", "via", "layover")) {
		return nil
	}
	return []int{pairs[0][0], pairs[len(pairs)-1][1]}
}

// exchangeFor: "exchange the laptop … for a tablet".
var exchangeFor = mustFast(`\b(?:exchange|swap|trade) (?:the|my|this|that|these|those) ([a-z-]+(?: [a-z-]+)?)\b[^.?!;]{0,40}? for (?:a|an|some) (?:pair of )?([a-z-]+(?: [a-z-]+)?)`)

// sameProduct are the words a target takes when it is an option of the
// same product ("for a bigger one", "for a different colour").
var sameProduct = map[string]bool{"one": true, "ones": true, "version": true, "model": true, "size": true, "color": true, "colour": true,
	"variant": true, "option": true, "different": true, "new": true, "bigger": true, "smaller": true, "larger": true, "replacement": true,
	"same": true, "refund": true, "full": true, "similar": true, "newer": true, "better": true, "cheaper": true, "pair": true}

// otherProduct finds an exchange into another product type: the tools
// exchange an item only for another option of the same product.
func otherProduct(cr *catalogRules, lower string) []int {
	if !cr.exchange || !strings.Contains(lower, " for a") {
		return nil
	}
	m := exchangeFor.FindStringSubmatchIndex(lower)
	if m == nil {
		return nil
	}
	from := strings.Fields(lower[m[2]:m[3]])
	to := strings.Fields(lower[m[4]:m[5]])
	if len(to) > 1 && functionWord[to[1]] {
		to = to[:1] // "a tablet instead"
	}
	for _, w := range to {
		if sameProduct[w] || hasDigit(w) {
			return nil
		}
	}
	head := strings.TrimSuffix(to[len(to)-1], "s")
	for _, w := range from {
		if strings.TrimSuffix(w, "s") == head {
			return nil
		}
	}
	if functionWord[head] || determiner[head] || len(head) < 4 {
		return nil
	}
	return m[:2]
}
