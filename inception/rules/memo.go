package rules

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
)

// Per-message memo: a dialogue's earlier messages never change once said,
// yet each turn's checks read them again (the user's earlier turns for
// what they ruled out or counted, the agent's messages for what they
// listed). What a check derives from one message alone is kept here,
// keyed by the message's text, so that a conversation analyses each
// message once. Entries are immutable once stored.

// DefaultMemoBytes is the memo's default budget: about a thousand τ-bench
// dialogues' worth of messages and what is derived from them.
const DefaultMemoBytes = 16 << 20

// memoShards spreads the lock: the detector calls Detect from many
// goroutines.
const memoShards = 16

// memoOverhead approximates an entry's map slot and headers, in bytes, so
// that many short messages still count against the budget.
const memoOverhead = 96

// userFacts is what the checks reading the user's earlier turns derive
// from one of them.
type userFacts struct {
	lower  string // strings.ToLower of the text
	justMe bool   // the user said they travel alone
	// ruledOut are the terms of the turn's negations (earlierTerm), in
	// order; nil when it corrects a value or negates nothing.
	ruledOut []string
	// party is the number of travellers the turn states (partyTotal) or
	// else enumerates (partyNamed); 0 for none. The turn is read for
	// them when it is the current one too (countConflict, twice a turn:
	// NeedsContext and Detect), hence each with its span.
	party        int
	total, named int
	tloc, nloc   []int
}

func (f *userFacts) bytes() int {
	n := len(f.lower) + 112
	for _, t := range f.ruledOut {
		n += len(t) + 16
	}
	return n
}

func newUserFacts(text string) *userFacts {
	f := &userFacts{lower: strings.ToLower(text)}
	prev := f.lower
	f.justMe = justMe.MatchString(prev)
	// A corrected value is no ruling out.
	if !correction.MatchString(prev) && hasAny(prev, "no", "without", "don") { // "not" holds "no"
		for _, m := range earlierNegated.FindAllStringSubmatch(prev, -1) {
			if term := earlierTerm(m[1]); term != "" {
				f.ruledOut = append(f.ruledOut, term)
			}
		}
		f.ruledOut = f.ruledOut[:len(f.ruledOut):len(f.ruledOut)]
	}
	f.total, f.tloc = partyTotal(prev)
	f.named, f.nloc = partyNamed(prev)
	if f.party = f.total; f.party == 0 {
		f.party = f.named
	}
	return f
}

// agentFacts is what the checks reading the agent's last message derive
// from it alone.
type agentFacts struct {
	lower string // strings.ToLower of the text
	// What a read-back check needs, found on first use (most turns
	// never ask): set once under once, read-only after.
	once       sync.Once
	numbers    []string          // digit runs of three or more (otherNumber)
	quantities map[string]string // amounts by unit (otherQuantity)
	// The lists it holds, which the candidates of every kind share
	// (agentCandidatesOf), found on first use.
	bulletsOnce, inlineOnce sync.Once
	bulletLines, inline     []string
}

// bullets returns the message's bulleted or numbered lines.
func (f *agentFacts) bullets() []string {
	f.bulletsOnce.Do(func() {
		f.bulletLines = bulletLine.FindAllString(f.lower, -1)
		f.bulletLines = f.bulletLines[:len(f.bulletLines):len(f.bulletLines)]
	})
	return f.bulletLines
}

// inlineList returns the message's inline list (inlineList).
func (f *agentFacts) inlineList() []string {
	f.inlineOnce.Do(func() { f.inline = inlineList(f.lower) })
	return f.inline
}

func newAgentFacts(text string) *agentFacts {
	return &agentFacts{lower: strings.ToLower(text)}
}

// readBack returns the message's numbers and amounts by unit.
func (f *agentFacts) readBack() ([]string, map[string]string) {
	f.once.Do(func() {
		f.numbers = number.FindAllString(f.lower, -1)
		f.numbers = f.numbers[:len(f.numbers):len(f.numbers)]
		f.quantities = agentQuantities(f.lower)
	})
	return f.numbers, f.quantities
}

// bytes counts the values found on first use at a rough bound: they may
// come later.
func (f *agentFacts) bytes() int {
	return 4*len(f.lower) + 192
}

// candKey is an agent message's candidates of one kind.
type candKey struct {
	dr   *domainRules
	kind string
	text string
}

// memo holds the per-message values of one Module. A nil *memo computes
// every value afresh.
type memo struct {
	seed   maphash.Seed
	users  [memoShards]memoShard[string, *userFacts]
	agents [memoShards]memoShard[string, *agentFacts]
	cands  [memoShards]memoShard[candKey, candidates]
	turns  [memoShards]memoShard[turnKey, *turnUnsupported]
	refs   [memoShards]memoShard[candKey, [][]int]
}

// newMemo returns a memo within budget bytes, a fifth for each kind of
// value; nil when budget is negative (no memo).
func newMemo(budget int) *memo {
	if budget < 0 {
		return nil
	}
	mm := &memo{seed: maphash.MakeSeed()}
	limit := budget / 5 / memoShards / 2 // per shard and generation
	for i := range mm.users {
		mm.users[i].limit = limit
		mm.agents[i].limit = limit
		mm.cands[i].limit = limit
		mm.turns[i].limit = limit
		mm.refs[i].limit = limit
	}
	return mm
}

func (mm *memo) shard(text string) int {
	return int(maphash.String(mm.seed, text) % memoShards)
}

// user returns the facts of a user message.
func (mm *memo) user(text string) *userFacts {
	if mm == nil {
		return newUserFacts(text)
	}
	s := &mm.users[mm.shard(text)]
	if f, ok := s.get(text); ok {
		return f
	}
	f := newUserFacts(text)
	s.put(text, f, len(text)+f.bytes()+memoOverhead)
	return f
}

// agent returns the facts of an agent message.
func (mm *memo) agent(text string) *agentFacts {
	if mm == nil {
		return newAgentFacts(text)
	}
	s := &mm.agents[mm.shard(text)]
	if f, ok := s.get(text); ok {
		return f
	}
	f := newAgentFacts(text)
	s.put(text, f, len(text)+f.bytes()+memoOverhead)
	return f
}

// turnKey is a user turn's unsupported findings with one tool catalogue.
type turnKey struct {
	cr   *catalogRules
	text string
}

// turn returns unsupported's view of a user turn alone (computed by
// build on a miss).
func (mm *memo) turn(cr *catalogRules, text string, build func() *turnUnsupported) *turnUnsupported {
	if mm == nil {
		return build()
	}
	k := turnKey{cr: cr, text: text}
	s := &mm.turns[mm.shard(text)]
	if tu, ok := s.get(k); ok {
		return tu
	}
	tu := build()
	s.put(k, tu, len(text)+tu.bytes()+memoOverhead)
	return tu
}

// openRefs returns openRefs of the user turn text: read twice a turn, by
// NeedsContext and by Detect. The spans are copies.
func (mm *memo) openRefs(dr *domainRules, text string) [][]int {
	if mm == nil {
		return openRefs(dr, text, strings.ToLower(text))
	}
	k := candKey{dr: dr, text: text}
	s := &mm.refs[mm.shard(text)]
	refs, ok := s.get(k)
	if !ok {
		refs = openRefs(dr, text, strings.ToLower(text)) // of the key alone
		s.put(k, refs, len(text)+32*len(refs)+memoOverhead)
	}
	if len(refs) == 0 {
		return nil
	}
	out := make([][]int, len(refs))
	for i, r := range refs {
		out[i] = slices.Clone(r)
	}
	return out
}

// candidates returns agentCandidates(dr, text, kind).
func (mm *memo) candidates(dr *domainRules, text, kind string) candidates {
	if mm == nil {
		return agentCandidates(dr, text, kind)
	}
	k := candKey{dr: dr, kind: kind, text: text}
	s := &mm.cands[mm.shard(text)]
	if c, ok := s.get(k); ok {
		return c
	}
	c := agentCandidatesOf(dr, mm.agent(text), text, kind)
	// Capped, so that an append by a reader copies instead of writing
	// into the shared array.
	c.spans = c.spans[:len(c.spans):len(c.spans)]
	n := len(text) + len(kind) + memoOverhead
	for _, sp := range c.spans {
		n += len(sp) + 16
	}
	s.put(k, c, n)
	return c
}

// bytes is the memo's current size as counted against its budget.
func (mm *memo) bytes() int {
	n := 0
	for i := range mm.users {
		n += mm.users[i].size() + mm.agents[i].size() + mm.cands[i].size() + mm.turns[i].size() + mm.refs[i].size()
	}
	return n
}

// memoShard is a two-generation cache: entries enter the young
// generation; when it reaches its limit the old one is dropped and the
// young one takes its place. A hit in the old generation moves the entry
// back to the young one, so what a live conversation reads stays while
// finished conversations age out. Each generation holds at most limit
// bytes (one entry larger than that is not kept).
type memoShard[K comparable, V any] struct {
	mu                   sync.Mutex
	limit                int
	young, old           map[K]memoEntry[V]
	youngBytes, oldBytes int
}

type memoEntry[V any] struct {
	v     V
	bytes int
}

func (s *memoShard[K, V]) get(k K) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.young[k]; ok {
		return e.v, true
	}
	e, ok := s.old[k]
	if !ok {
		var zero V
		return zero, false
	}
	delete(s.old, k)
	s.oldBytes -= e.bytes
	s.add(k, e)
	return e.v, true
}

func (s *memoShard[K, V]) put(k K, v V, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.young[k]; ok {
		return // another goroutine stored it first
	}
	if e, ok := s.old[k]; ok {
		delete(s.old, k)
		s.oldBytes -= e.bytes
	}
	s.add(k, memoEntry[V]{v: v, bytes: bytes})
}

// add stores e in the young generation, turning generations first when it
// would not fit; the caller holds mu.
func (s *memoShard[K, V]) add(k K, e memoEntry[V]) {
	if e.bytes > s.limit {
		return
	}
	if s.youngBytes+e.bytes > s.limit {
		s.old, s.oldBytes = s.young, s.youngBytes
		s.young, s.youngBytes = nil, 0
	}
	if s.young == nil {
		s.young = map[K]memoEntry[V]{}
	}
	s.young[k] = e
	s.youngBytes += e.bytes
}

func (s *memoShard[K, V]) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.youngBytes + s.oldBytes
}
