package rules

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// cue is a compiled RE2 cue with a literal prefilter: every match contains
// one of lits, and no match is longer than maxLen bytes (-1: unbounded). A
// turn without any of the literals is rejected without running the regexp,
// and a hit runs the regexp only on a word-aligned window around it. This
// keeps the rules module within microseconds per turn.
type cue struct {
	re     *regexp.Regexp
	lits   []string
	maxLen int
	// left/right: the regexp requires a word boundary just before/after
	// the literal, so a hit glued to a word ("seat" in "seattle") is
	// skipped without running the regexp.
	left, right bool
}

// maxProduct bounds the literal sets built from concatenations.
const maxProduct = 64

func compileCue(expr string) cue {
	c := cue{re: regexp.MustCompile(expr), maxLen: -1}
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return c
	}
	ls := requiredLits(tree)
	c.lits, c.left, c.right = ls.lits, ls.left, ls.right
	if minLen(c.lits) <= 0 {
		c.lits = nil
	}
	c.maxLen = maxMatchLen(tree)
	return c
}

// compileCues compiles each expression (already validated at taxonomy load).
func compileCues(exprs []string) []cue {
	out := make([]cue, 0, len(exprs))
	for _, e := range exprs {
		out = append(out, compileCue(e))
	}
	return out
}

// bigrams is a presence bitmap of the byte pairs of one text, hashed
// into 8,192 bits: a literal with a pair the text lacks cannot occur in
// it, which rejects most literals without a substring search. A pair that
// shares its bit with one the text has only costs that search. Small, as
// it lives on the stack of every turn's checks: a full 64 Ki-bit map
// (8 KB) made a fresh goroutine grow its stack on each turn.
type bigrams [128]uint64

// bigramBit is the bit of the pair a, b.
func bigramBit(a, b byte) uint32 { return (uint32(a)<<8 | uint32(b)) * 0x9E3779B1 >> 19 }

func (bg *bigrams) build(s string) {
	for i := 0; i+1 < len(s); i++ {
		k := bigramBit(s[i], s[i+1])
		bg[k>>6] |= 1 << (k & 63)
	}
}

func (bg *bigrams) mayContain(lit string) bool {
	for i := 0; i+1 < len(lit) && i < 8; i++ {
		k := bigramBit(lit[i], lit[i+1])
		if bg[k>>6]&(1<<(k&63)) == 0 {
			return false
		}
	}
	return true
}

// find returns the first match location in text (which is lower-cased), or
// nil. bg, when not nil, is the bigram map of text.
func (c *cue) find(text string, bg *bigrams) []int {
	if c.lits == nil {
		return c.re.FindStringIndex(text)
	}
	if c.maxLen < 0 {
		// Unbounded: no window, but a text without any literal cannot
		// match.
		for _, lit := range c.lits {
			if (bg == nil || bg.mayContain(lit)) && strings.Contains(text, lit) {
				return c.re.FindStringIndex(text)
			}
		}
		return nil
	}
	for _, lit := range c.lits {
		if bg != nil && !bg.mayContain(lit) {
			continue
		}
		for off := 0; off < len(text); {
			i := strings.Index(text[off:], lit)
			if i < 0 {
				break
			}
			i += off
			off = i + 1
			if c.left && i > 0 && isASCIIWord(text[i-1]) && isASCIIWord(lit[0]) ||
				c.right && i+len(lit) < len(text) && isASCIIWord(text[i+len(lit)]) && isASCIIWord(lit[len(lit)-1]) {
				continue
			}
			start, end := i-c.maxLen, i+len(lit)+c.maxLen
			if start < 0 {
				start = 0
			}
			if end > len(text) {
				end = len(text)
			}
			for start > 0 && isWordByte(text[start-1]) {
				start--
			}
			for end < len(text) && isWordByte(text[end]) {
				end++
			}
			if loc := c.re.FindStringIndex(text[start:end]); loc != nil {
				return []int{start + loc[0], start + loc[1]}
			}
		}
	}
	return nil
}

// findAny returns the first match of any cue.
func findAny(cues []cue, text string, bg *bigrams) []int {
	for i := range cues {
		if loc := cues[i].find(text, bg); loc != nil {
			return loc
		}
	}
	return nil
}

// isASCIIWord matches RE2's \b notion of a word character.
func isASCIIWord(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b >= utf8.RuneSelf
}

// litSet is a set of strings one of which every match contains; left and
// right report a word boundary required right before or after it.
type litSet struct {
	lits        []string
	left, right bool
}

func isBoundary(re *syntax.Regexp) bool { return re.Op == syntax.OpWordBoundary }

// requiredLits derives a litSet from a parsed regexp; lits is nil when none
// can be derived.
func requiredLits(re *syntax.Regexp) litSet {
	switch re.Op {
	case syntax.OpLiteral:
		return litSet{lits: []string{strings.ToLower(string(re.Rune))}}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLits(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLits(re.Sub[0])
		}
		return litSet{}
	case syntax.OpAlternate:
		out := litSet{left: true, right: true}
		for _, sub := range re.Sub {
			s := requiredLits(sub)
			if s.lits == nil {
				return litSet{}
			}
			out.lits = append(out.lits, s.lits...)
			out.left = out.left && s.left
			out.right = out.right && s.right
		}
		out.lits = dedupe(out.lits)
		return out
	case syntax.OpConcat:
		// Runs of adjacent children with exact literal sets are multiplied
		// out ("th"+{"is","at"} → {"this","that"}); the best run or child
		// wins.
		var best, run litSet
		for i, sub := range re.Sub {
			exact := exactLits(sub)
			switch {
			case exact != nil && run.lits != nil && len(run.lits)*len(exact) <= maxProduct:
				run.lits = product(run.lits, exact)
			case exact != nil:
				best = better(best, run)
				run = litSet{lits: exact, left: i > 0 && isBoundary(re.Sub[i-1])}
			default:
				run.right = isBoundary(sub)
				best = better(best, run)
				run = litSet{}
				if sub.Op == syntax.OpWordBoundary || sub.Op == syntax.OpNoWordBoundary || sub.Op == syntax.OpBeginText || sub.Op == syntax.OpEndText || sub.Op == syntax.OpBeginLine || sub.Op == syntax.OpEndLine {
					continue
				}
				best = better(best, requiredLits(sub))
			}
		}
		return better(best, run)
	}
	return litSet{}
}

// exactLits returns the full set of strings re matches when it is a small
// finite set of literals, else nil.
func exactLits(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}
	case syntax.OpCapture:
		return exactLits(re.Sub[0])
	case syntax.OpQuest:
		if s := exactLits(re.Sub[0]); s != nil && len(s) < maxProduct {
			return dedupe(append(s, ""))
		}
		return nil
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > 8 {
				return nil
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, strings.ToLower(string(r)))
			}
		}
		if len(out) > maxProduct {
			return nil
		}
		return dedupe(out)
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s := exactLits(sub)
			if s == nil {
				return nil
			}
			out = append(out, s...)
		}
		if len(out) > maxProduct {
			return nil
		}
		return dedupe(out)
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			s := exactLits(sub)
			if s == nil || len(out)*len(s) > maxProduct {
				return nil
			}
			out = product(out, s)
		}
		return out
	}
	return nil
}

func product(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return dedupe(out)
}

// better prefers the set that is selective enough (shortest literal up to
// 6 bytes counts) with the fewest literals to look for.
func better(a, b litSet) litSet {
	if a.lits == nil {
		return b
	}
	if b.lits == nil {
		return a
	}
	if litScore(b.lits) > litScore(a.lits) {
		return b
	}
	return a
}

func litScore(s []string) int { return min(minLen(s), 6)*1000 - len(s) }

func minLen(s []string) int {
	m := -1
	for _, x := range s {
		if m < 0 || len(x) < m {
			m = len(x)
		}
	}
	return m
}

func dedupe(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := s[:0:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// maxMatchLen bounds the byte length of a match, or -1 when unbounded.
func maxMatchLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return 0
	case syntax.OpCapture, syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return -1
		}
		n := maxMatchLen(re.Sub[0])
		if n < 0 {
			return -1
		}
		return n * re.Max
	case syntax.OpConcat:
		sum := 0
		for _, sub := range re.Sub {
			n := maxMatchLen(sub)
			if n < 0 {
				return -1
			}
			sum += n
		}
		return sum
	case syntax.OpAlternate:
		best := 0
		for _, sub := range re.Sub {
			n := maxMatchLen(sub)
			if n < 0 {
				return -1
			}
			if n > best {
				best = n
			}
		}
		return best
	}
	return -1
}

// fastRE is a package regexp with the literal prefilter of a cue: a text
// holding none of the literals every match needs is rejected with a few
// substring searches, without running the regexp. The rules module's own
// expressions run on every turn, so most must cost next to nothing when
// their words are absent.
type fastRE struct {
	re   *regexp.Regexp
	lits []string // nil: no prefilter
}

func mustFast(expr string) *fastRE {
	f := &fastRE{re: regexp.MustCompile(expr)}
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil {
		if ls := requiredLits(tree); minLen(ls.lits) > 0 {
			f.lits = ls.lits
		}
	}
	return f
}

// may reports whether s can hold a match.
func (f *fastRE) may(s string) bool {
	if f.lits == nil {
		return true
	}
	for _, l := range f.lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

func (f *fastRE) String() string { return f.re.String() }

func (f *fastRE) MatchString(s string) bool { return f.may(s) && f.re.MatchString(s) }

func (f *fastRE) FindStringIndex(s string) []int {
	if !f.may(s) {
		return nil
	}
	return f.re.FindStringIndex(s)
}

func (f *fastRE) FindStringSubmatchIndex(s string) []int {
	if !f.may(s) {
		return nil
	}
	return f.re.FindStringSubmatchIndex(s)
}

func (f *fastRE) FindAllStringIndex(s string, n int) [][]int {
	if !f.may(s) {
		return nil
	}
	return f.re.FindAllStringIndex(s, n)
}

func (f *fastRE) FindAllStringSubmatchIndex(s string, n int) [][]int {
	if !f.may(s) {
		return nil
	}
	return f.re.FindAllStringSubmatchIndex(s, n)
}

func (f *fastRE) FindAllStringSubmatch(s string, n int) [][]string {
	if !f.may(s) {
		return nil
	}
	return f.re.FindAllStringSubmatch(s, n)
}

func (f *fastRE) FindAllString(s string, n int) []string {
	if !f.may(s) {
		return nil
	}
	return f.re.FindAllString(s, n)
}
