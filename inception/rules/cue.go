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
	// ix, when not nil, is the module's literal index holding lits under
	// the ids id0, id0+1, …: a textScan made with it tells which of them
	// the text holds.
	ix  *litIndex
	id0 int
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

// maxIndexed bounds the literals a litIndex holds (the default taxonomy's
// cues have about 1,400); the cues past it are filtered by bigrams alone.
const maxIndexed = 4096

// litIndex holds the literals of a module's cues, bucketed by a hash of
// their first three bytes: one pass over a text finds every literal it
// holds, where each cue would otherwise search the text once per literal
// (about 1,800 searches per turn).
type litIndex struct {
	n     int                     // ids assigned
	short []litEntry              // literals under three bytes, searched for
	used  [triBuckets / 64]uint64 // buckets holding any literal
	head  [triBuckets + 1]int32   // bucket b is ents[head[b]:head[b+1]]
	ents  []litEntry
}

// litEntry is one distinct literal and the ids it has in the cues.
type litEntry struct {
	lit string
	ids []int
}

const triBuckets = 4096

func triBucket(a, b, c byte) uint32 {
	return (uint32(a)<<16 | uint32(b)<<8 | uint32(c)) * 0x9E3779B1 >> 20
}

// newLitIndex gives the literals of cues ids, in order, while fewer than
// maxIndexed are given; a cue whose literals would pass it keeps none.
func newLitIndex(cues []*cue) *litIndex {
	ix := &litIndex{}
	byLit := map[string][]int{}
	var order []string
	for _, c := range cues {
		if c.lits == nil || ix.n+len(c.lits) > maxIndexed {
			continue
		}
		c.ix, c.id0 = ix, ix.n
		for k, lit := range c.lits {
			if byLit[lit] == nil {
				order = append(order, lit)
			}
			byLit[lit] = append(byLit[lit], c.id0+k)
		}
		ix.n += len(c.lits)
	}
	buckets := make([][]litEntry, triBuckets)
	for _, lit := range order {
		e := litEntry{lit: lit, ids: byLit[lit]}
		if len(lit) < 3 {
			ix.short = append(ix.short, e)
			continue
		}
		b := triBucket(lit[0], lit[1], lit[2])
		buckets[b] = append(buckets[b], e)
		ix.used[b>>6] |= 1 << (b & 63)
	}
	for b, es := range buckets {
		ix.head[b] = int32(len(ix.ents))
		ix.ents = append(ix.ents, es...)
	}
	ix.head[triBuckets] = int32(len(ix.ents))
	return ix
}

// textScan is what the cues' prefilters know of one lower-cased text:
// its bigrams, and which literals of a litIndex it holds. It serves the
// text itself or any substring of it (a literal absent from the whole is
// absent from a part).
type textScan struct {
	bg  bigrams
	ix  *litIndex
	has [maxIndexed / 64]uint64
}

// scan fills sc for text; ix may be nil (bigrams only).
func (sc *textScan) scan(text string, ix *litIndex) {
	sc.bg.build(text)
	sc.ix = ix
	if ix == nil {
		return
	}
	set := func(ids []int) {
		for _, id := range ids {
			sc.has[id>>6] |= 1 << (id & 63)
		}
	}
	for _, e := range ix.short {
		if strings.Contains(text, e.lit) {
			set(e.ids)
		}
	}
	for i := 0; i+3 <= len(text); i++ {
		b := triBucket(text[i], text[i+1], text[i+2])
		if ix.used[b>>6]&(1<<(b&63)) == 0 {
			continue
		}
		for _, e := range ix.ents[ix.head[b]:ix.head[b+1]] {
			if strings.HasPrefix(text[i:], e.lit) {
				set(e.ids)
			}
		}
	}
}

// indexed reports whether sc knows which of c's literals the text holds.
func (sc *textScan) indexed(c *cue) bool { return c.ix != nil && c.ix == sc.ix }

// anyIn reports whether the text holds any literal of ids [lo, hi).
func (sc *textScan) anyIn(lo, hi int) bool {
	for w := lo >> 6; w <= (hi-1)>>6; w++ {
		word := sc.has[w]
		if w == lo>>6 {
			word &= ^uint64(0) << (lo & 63)
		}
		if w == (hi-1)>>6 {
			word &= ^uint64(0) >> (63 - (hi-1)&63)
		}
		if word != 0 {
			return true
		}
	}
	return false
}

// mayHold reports whether the scanned text can hold literal k of c.
func (sc *textScan) mayHold(c *cue, k int) bool {
	if c.ix != nil && c.ix == sc.ix {
		id := c.id0 + k
		return sc.has[id>>6]&(1<<(id&63)) != 0
	}
	return sc.bg.mayContain(c.lits[k])
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
// nil. sc, when not nil, is the scan of text or of a text holding it.
func (c *cue) find(text string, sc *textScan) []int {
	if c.lits == nil {
		return c.re.FindStringIndex(text)
	}
	if sc != nil && sc.indexed(c) && !sc.anyIn(c.id0, c.id0+len(c.lits)) {
		return nil // most cues, most turns
	}
	if c.maxLen < 0 {
		// Unbounded: no window, but a text without any literal cannot
		// match.
		for k, lit := range c.lits {
			if (sc == nil || sc.mayHold(c, k)) && strings.Contains(text, lit) {
				return c.re.FindStringIndex(text)
			}
		}
		return nil
	}
	for k, lit := range c.lits {
		if sc != nil && !sc.mayHold(c, k) {
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
func findAny(cues []cue, text string, sc *textScan) []int {
	for i := range cues {
		if loc := cues[i].find(text, sc); loc != nil {
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
	// many, for an expression with many literals: they are looked for
	// in one pass over a short text rather than one search each.
	many *litGroup
}

// manyLits is how many literals make one pass over a text cheaper than a
// search for each, whatever the text's length: a pass costs about 3 ns a
// byte, a search about 1 (measured: BenchmarkFastREMay).
const manyLits = 5

// litGroup finds whether a text holds any of a set of literals in one pass:
// a text position can start one only when the hash of its next three
// bytes is in firsts.
type litGroup struct {
	firsts [16]uint64 // 1,024 bits of first-three-byte hashes
	long   []string   // literals of three bytes or more
	hashes []uint16   // per long literal, its first three bytes' hash
	short  []string   // literals under three bytes, searched for
}

func triHash(a, b, c byte) uint16 {
	return uint16((uint32(a)<<16 | uint32(b)<<8 | uint32(c)) * 0x9E3779B1 >> 22)
}

func newLitGroup(lits []string) *litGroup {
	ls := &litGroup{}
	for _, l := range lits {
		if len(l) < 3 {
			ls.short = append(ls.short, l)
			continue
		}
		h := triHash(l[0], l[1], l[2])
		ls.long = append(ls.long, l)
		ls.hashes = append(ls.hashes, h)
		ls.firsts[h>>6] |= 1 << (h & 63)
	}
	return ls
}

// any reports whether s holds one of the literals.
func (ls *litGroup) any(s string) bool {
	for _, l := range ls.short {
		if strings.Contains(s, l) {
			return true
		}
	}
	for i := 0; i+3 <= len(s); i++ {
		h := triHash(s[i], s[i+1], s[i+2])
		if ls.firsts[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for j, l := range ls.long {
			if ls.hashes[j] == h && strings.HasPrefix(s[i:], l) {
				return true
			}
		}
	}
	return false
}

func mustFast(expr string) *fastRE {
	f := &fastRE{re: regexp.MustCompile(expr)}
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil {
		if ls := requiredLits(tree); minLen(ls.lits) > 0 {
			f.lits = ls.lits
		}
	}
	if len(f.lits) >= manyLits {
		f.many = newLitGroup(f.lits)
	}
	fastREs = append(fastREs, f)
	return f
}

// fastREs are the expressions made with mustFast (at package init), so
// that a test can check each prefilter against its plain regexp.
var fastREs []*fastRE

// may reports whether s can hold a match.
func (f *fastRE) may(s string) bool {
	if f.lits == nil {
		return true
	}
	if f.many != nil {
		return f.many.any(s)
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
