package rules

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/reinception/rein/inception"
)

// Product options (Config.Products): the user asks for a product they
// name, or the dialogue names, with an option value of a kind the product
// has (a size, a capacity, a storage, a colour, a material) that the
// product does not come in: "size 11" running shoes that come in 8, 9 and
// 10, a 3 L kettle, 64 GB of RAM. A value some product in play has, a
// quantity, a price or an id is no such value.

// optionRules is the catalogue compiled for the rules: per product the
// values of each class ("unit:ml", "size", "color", "material"), and the
// word values of the whole catalogue per class.
type optionRules struct {
	domain   string
	products []optionProduct
	words    []optionWord // colour and material words, longest first
}

type optionProduct struct {
	name   string
	words  []string
	values map[string]map[string]bool // class → normalised values
	shown  map[string][]string        // class → the catalogue's values, as written
	all    map[string]bool            // every value of any kind, normalised
}

type optionWord struct {
	word, class string
}

// optionValue is a value the user turn names.
type optionValue struct {
	class, value, text string
	loc                []int
}

var (
	// unitValue: a number and a unit the catalogue's options use.
	unitValue = regexp.MustCompile(`\b(\d+(?:\.\d+)?)\s?-?\s?(gb|tb|liters?|litres?|l|ml|mah|ft|feet|foot|inch|inches|mm|mp|bar|hours?|cups?|lbs|degrees|pieces?)\b`)
	// sizeValue: "size 11", "size XXXL", "an XXL".
	sizeValue = regexp.MustCompile(`\bsize\s+(?:an?\s+)?([a-z0-9.]+)\b|\b(x{2,4}l|[2-5]xl)\b`)
	// bareSize: "for an 11", "into a 12" (a shoe size without the word).
	bareSize = regexp.MustCompile(`\b(?:for|into|to|in)\s+(?:an?|the)\s+(\d{1,2}(?:\.5)?)(?:\s*(?:[,.!?;]|$|instead|please|same|and|then|if|with))`)
	// optionAsked: the turn asks for something (an exchange, a change, a
	// purchase of a variant); a value only described is not asked for.
	optionAsked = regexp.MustCompile(`\b(?:exchange|swap|switch|change|modify|upgrade|replace|trade|instead|want|wanted|would like|'d like|prefer|go with|get|need|make (?:it|them)|rather|do you have|have (?:it|them|one) in|available|any chance|can i|could i|could you|can you|please)\b`)
	// optionQuestion: the agent asked the user to pick an option.
	optionQuestion = regexp.MustCompile(`\b(?:which|what) (?:option|size|color|colou?r|capacity|storage|variant|one)|would you like instead|\binstead\?`)
	letterSize     = map[string]bool{"xs": true, "s": true, "m": true, "l": true, "xl": true, "xxl": true, "xxxl": true, "xxxxl": true, "2xl": true, "3xl": true, "4xl": true, "small": true, "medium": true, "large": true}
)

// unitScale normalises a unit to the catalogue's base unit and factor.
func unitScale(u string) (string, float64) {
	switch u {
	case "tb":
		return "gb", 1000
	case "l", "liter", "liters", "litre", "litres":
		return "ml", 1000
	case "feet", "foot":
		return "ft", 1
	case "inches":
		return "inch", 1
	case "hour":
		return "hours", 1
	case "cup":
		return "cups", 1
	case "piece":
		return "pieces", 1
	}
	return u, 1
}

// unitAtom returns a "unit:<u>" class and the normalised amount of the
// first number and unit in s.
func unitAtom(s string) (class, value string, loc []int, ok bool) {
	m := unitValue.FindStringSubmatchIndex(s)
	if m == nil {
		return "", "", nil, false
	}
	n, err := strconv.ParseFloat(s[m[2]:m[3]], 64)
	if err != nil {
		return "", "", nil, false
	}
	unit, f := unitScale(s[m[4]:m[5]])
	return "unit:" + unit, strconv.FormatFloat(n*f, 'f', -1, 64), m[:2], true
}

// optionClass is the class of an option kind's word values ("" for none).
func optionClass(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.Contains(k, "color") || strings.Contains(k, "colour"):
		return "color"
	case strings.Contains(k, "material"):
		return "material"
	case k == "size" || k == "frame size":
		return "size"
	}
	return ""
}

func normWord(w string) string { return strings.ReplaceAll(strings.ToLower(w), "grey", "gray") }

// compileOptions compiles a catalogue for the rules (nil for none).
func compileOptions(pc *ProductCatalogue) *optionRules {
	if pc == nil {
		return nil
	}
	or := &optionRules{domain: pc.Domain}
	seen := map[optionWord]bool{}
	for _, p := range pc.Products {
		op := optionProduct{name: p.Name, words: p.Words, values: map[string]map[string]bool{}, shown: map[string][]string{}, all: map[string]bool{}}
		add := func(class, value, shown string) {
			if op.values[class] == nil {
				op.values[class] = map[string]bool{}
			}
			op.values[class][value] = true
			op.shown[class] = append(op.shown[class], shown)
		}
		kinds := make([]string, 0, len(p.Options))
		for k := range p.Options {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, kind := range kinds {
			for _, v := range p.Options[kind] {
				lv := strings.ToLower(v)
				op.all[normWord(lv)] = true
				if class, val, _, ok := unitAtom(lv); ok {
					add(class, val, v)
					continue
				}
				class := optionClass(kind)
				if class == "" {
					continue
				}
				add(class, normWord(lv), v)
				if class != "size" && len(lv) >= 3 && lv != "rgb" {
					w := optionWord{word: normWord(lv), class: class}
					if !seen[w] {
						seen[w] = true
						or.words = append(or.words, w)
					}
				}
			}
		}
		or.products = append(or.products, op)
	}
	sort.Slice(or.words, func(i, j int) bool {
		if len(or.words[i].word) != len(or.words[j].word) {
			return len(or.words[i].word) > len(or.words[j].word)
		}
		return or.words[i].word < or.words[j].word
	})
	return or
}

// values returns the option values the user turn names, not negated.
func (or *optionRules) values(lower string) []optionValue {
	var out []optionValue
	taken := func(i int) bool {
		for _, v := range out {
			if i >= v.loc[0] && i < v.loc[1] {
				return true
			}
		}
		return false
	}
	for off := 0; off < len(lower); {
		class, val, loc, ok := unitAtom(lower[off:])
		if !ok {
			break
		}
		loc = []int{off + loc[0], off + loc[1]}
		off = loc[1]
		if loc[0] > 0 && strings.ContainsRune("$#", rune(lower[loc[0]-1])) {
			continue
		}
		out = append(out, optionValue{class: class, value: val, text: lower[loc[0]:loc[1]], loc: loc})
	}
	for _, m := range sizeValue.FindAllStringSubmatchIndex(lower, -1) {
		g := 2
		if m[2] < 0 {
			g = 4
		}
		tok := lower[m[g]:m[g+1]]
		if _, err := strconv.ParseFloat(tok, 64); err != nil && !letterSize[tok] || taken(m[g]) {
			continue
		}
		out = append(out, optionValue{class: "size", value: tok, text: tok, loc: []int{m[0], m[1]}})
	}
	for _, m := range bareSize.FindAllStringSubmatchIndex(lower, -1) {
		if !taken(m[2]) {
			out = append(out, optionValue{class: "size", value: lower[m[2]:m[3]], text: lower[m[2]:m[3]], loc: []int{m[0], m[3]}})
		}
	}
	norm := normWord(lower)
	// Product names are no values ("fleece jacket").
	for _, p := range or.products {
		for _, pw := range p.words {
			for i := inception.WordIndex(norm, pw); i >= 0; i = inception.WordIndex(norm, pw) {
				norm = norm[:i] + strings.Repeat("_", len(pw)) + norm[i+len(pw):]
			}
		}
	}
	for _, w := range or.words {
		for off := 0; off < len(norm); {
			i := inception.WordIndex(norm[off:], w.word)
			if i < 0 {
				break
			}
			i += off
			off = i + len(w.word)
			if !taken(i) && wordFramed(norm, i, off) {
				out = append(out, optionValue{class: w.class, value: w.word, text: w.word, loc: []int{i, i + len(w.word)}})
			}
		}
	}
	kept := out[:0]
	for _, v := range out {
		if !negatedBefore(lower, v.loc[0]) {
			kept = append(kept, v)
		}
	}
	return kept
}

// wordFramed reports a colour or material word [i, j) framed as an option
// asked for ("in rose gold", "a gold one", "to black"), not part of a name
// or an address ("Anya Brown", "Maple Drive").
func wordFramed(s string, i, j int) bool {
	before := strings.Fields(s[:i])
	if len(before) > 0 && framingBefore[before[len(before)-1]] {
		return true
	}
	after := strings.TrimSpace(s[j:])
	if after == "" || strings.ContainsRune(",.!?;", rune(after[0])) {
		return true
	}
	f := strings.Fields(after)
	return framingAfter[strings.Trim(f[0], ",.!?;")]
}

var (
	framingBefore = map[string]bool{"in": true, "to": true, "into": true, "for": true, "a": true, "an": true, "the": true, "with": true, "same": true, "and": true, "or": true}
	framingAfter  = map[string]bool{"one": true, "ones": true, "version": true, "color": true, "colour": true, "variant": true, "model": true, "instead": true, "finish": true, "please": true}
)

// named returns the products whose words s holds.
func (or *optionRules) named(s string) []*optionProduct {
	var out []*optionProduct
	for i := range or.products {
		p := &or.products[i]
		for _, w := range p.words {
			if inception.WordIndex(s, w) >= 0 {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// optionMismatch is the check: the value the user asks for, the product
// it was judged against, and whether the product came from the earlier
// dialogue rather than the turn (then the decision needs the dialogue).
// pending reports a value asked for with no product named in the turn.
type optionMismatch struct {
	loc         []int
	value       optionValue
	product     *optionProduct
	fromContext bool
}

// check finds an option value no product in play comes in.
func (or *optionRules) check(in inception.Input, lower string) (mm optionMismatch, pending bool) {
	if or == nil || in.Domain != or.domain {
		return mm, false
	}
	if !optionAsked.MatchString(lower) && !optionQuestion.MatchString(strings.ToLower(lastAgent(in.Dialogue[:len(in.Dialogue)-1]))) {
		return mm, false
	}
	vals := or.values(lower)
	if len(vals) == 0 {
		return mm, false
	}
	products := or.named(lower)
	fromContext := false
	if len(products) == 0 {
		// The products the earlier dialogue names (what the agent said
		// the order holds).
		for i := len(in.Dialogue) - 2; i >= 0 && i >= len(in.Dialogue)-1-DefaultWindow; i-- {
			products = append(products, or.named(strings.ToLower(in.Dialogue[i].Text))...)
		}
		if len(products) == 0 {
			return mm, len(in.Dialogue) == 1
		}
		fromContext = true
	}
	for _, v := range vals {
		var judged *optionProduct
		found := false
		for _, p := range products {
			vs := p.values[v.class]
			if vs == nil {
				continue
			}
			if judged == nil {
				judged = p
			}
			if vs[v.value] {
				found = true
				break
			}
		}
		for _, p := range products {
			// "rubber" is a sole, not a material, of running shoes.
			found = found || p.all[v.value]
		}
		if judged != nil && !found {
			return optionMismatch{loc: v.loc, value: v, product: judged, fromContext: fromContext}, false
		}
	}
	return mm, false
}

// note names the values the product has of the class asked for.
func (mm optionMismatch) note() string {
	if mm.product == nil {
		return ""
	}
	kind := strings.TrimPrefix(mm.value.class, "unit:")
	switch kind {
	case "ml":
		kind = "capacity"
	case "gb":
		kind = "storage or memory"
	}
	return fmt.Sprintf("The store's %s comes in %s %s only; %q is not one of them.",
		mm.product.name, kind, strings.Join(mm.product.shown[mm.value.class], ", "), mm.value.text)
}

// optionNote is the reasoning's sentence naming the available values when
// the decision is an option value the product lacks, else "".
func (m *Module) optionNote(in inception.Input, name, text string) string {
	if name != inception.TypeUnsupportedParameter || m.options == nil {
		return ""
	}
	mm, _ := m.options.check(in, strings.ToLower(text))
	return mm.note()
}
