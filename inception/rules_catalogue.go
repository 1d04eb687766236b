package inception

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"

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
				if wordIndex(w, strings.ToLower(obj)) >= 0 {
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
