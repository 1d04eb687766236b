package inception

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/reinception/rein/internal/llm"
)

// Rules modes.
const (
	// RulesPrecise activates only on strong evidence (the rules module
	// used alone).
	RulesPrecise = "precise"
	// RulesRecall is the looser gate of the cascade: it lets through every
	// turn with a cue, without the antecedent and context checks.
	RulesRecall = "recall"
)

// DefaultRulesWindow is how many earlier utterances the rules module scans
// for candidate entities.
const DefaultRulesWindow = 4

// RulesConfig configures the rules module.
type RulesConfig struct {
	Taxonomy *Taxonomy // default DefaultTaxonomy()
	Mode     string    // RulesPrecise (default) or RulesRecall
	Window   int       // default DefaultRulesWindow
}

// RulesModule is the offline inception module: no model, grounded in the
// agent's tool schemas and the taxonomy file. Everything is compiled at
// construction (and once per tool catalogue), so a turn costs a few
// microseconds.
type RulesModule struct {
	tax    *Taxonomy
	mode   string
	window int

	cues    map[string][]cue // error type → its cues (non-held-out)
	recall  map[string][]cue // extra recall-mode cues per type
	domains map[string]*domainRules

	seed    maphash.Seed
	mu      sync.RWMutex
	catalog map[catalogKey]*catalogRules
}

type domainRules struct {
	entities []*regexp.Regexp
	actions  []cue
	outside  []cue
	params   []ParameterNote
	contexts []*cue // per params entry, may be nil
}

type catalogKey struct {
	domain string
	hash   uint64
}

// catalogRules is what depends on the agent's tool schemas: the phrases
// naming a parameter value the tools do not accept.
type catalogRules struct {
	params []paramRule
}

type paramRule struct {
	phrases cue
	bad     map[string]bool // phrase → unsupported
	context *cue
}

// recallCues are the looser cues of RulesRecall, added to the taxonomy's.
var recallCues = map[string][]string{
	TypeAnaphora:               {`\b(?:that|this|the other) one\b`, `\b(?:those|these|them)\b`},
	TypeMultipleInterpretation: {`\beither\b`, `\bwhichever\b`, `\bnot sure (?:if|whether|which)\b`, `\bor (?:should|would|could|can|do) (?:i|you|we)\b`},
	TypeContradiction:          {`\b(?:actually|wait|i meant|changed my mind|on second thought|scratch that|never ?mind|that's wrong|that is wrong|that's not right|not correct|are you sure)\b`},
}

// descriptorAfter marks a reference that the user resolves in the same
// breath ("that one from Boston", "the flight on May 20").
var descriptorAfter = regexp.MustCompile(`^\s*(?:from|to|on|with|for|which|that|in|at|departing|arriving|booked|going|leaving|ending|starting|ordered|i (?:booked|ordered|bought|mentioned))\b`)

// inTurnAntecedent finds an entity noun earlier in the same turn, which a
// following pronoun most likely refers to.
var inTurnAntecedent = regexp.MustCompile(`\b(?:a|an|the|my|our|one|recent|new|existing) (?:[a-z-]+ )?(?:reservation|booking|flight|trip|ticket|order|item|product|package|purchase)s?\b`)

// pluralRef matches plural references, which point at a whole set.
var pluralRef = regexp.MustCompile(`\b(?:these|those|them|ones|reservations|bookings|flights|trips|orders|items|products|tickets)\b`)

// choiceQuestion marks an agent turn that asks the user to pick.
var choiceQuestion = regexp.MustCompile(`\bwhich\b|\bor\b`)

// NewRules compiles the rules module.
func NewRules(cfg RulesConfig) (*RulesModule, error) {
	if cfg.Taxonomy == nil {
		cfg.Taxonomy = DefaultTaxonomy()
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = RulesPrecise
	case RulesPrecise, RulesRecall:
	default:
		return nil, fmt.Errorf("%w: rules mode %q is not %s or %s", ErrInvalidConfig, cfg.Mode, RulesPrecise, RulesRecall)
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultRulesWindow
	}
	m := &RulesModule{
		tax: cfg.Taxonomy, mode: cfg.Mode, window: cfg.Window,
		cues: map[string][]cue{}, recall: map[string][]cue{},
		domains: map[string]*domainRules{}, seed: maphash.MakeSeed(), catalog: map[catalogKey]*catalogRules{},
	}
	for _, et := range cfg.Taxonomy.ErrorTypes {
		if et.HeldOut {
			continue
		}
		m.cues[et.Name] = compileCues(et.Cues)
		if cfg.Mode == RulesRecall && len(recallCues[et.Name]) > 0 {
			m.recall[et.Name] = compileCues(recallCues[et.Name])
		}
	}
	for name, d := range cfg.Taxonomy.Domains {
		dr := &domainRules{params: d.Parameters}
		for _, e := range d.Entities {
			dr.entities = append(dr.entities, regexp.MustCompile(e.Pattern))
		}
		dr.actions = groupCues(d.UnsupportedActions)
		dr.outside = groupCues(d.UnsupportedDomains)
		for _, p := range d.Parameters {
			var c *cue
			if p.Context != "" {
				cc := compileCue(p.Context)
				c = &cc
			}
			dr.contexts = append(dr.contexts, c)
		}
		m.domains[name] = dr
	}
	return m, nil
}

func groupCues(groups []CueGroup) []cue {
	var cues []string
	for _, g := range groups {
		cues = append(cues, g.Cues...)
	}
	return compileCues(cues)
}

// Name implements Module.
func (m *RulesModule) Name() string { return ModuleRules }

// Mode returns RulesPrecise or RulesRecall.
func (m *RulesModule) Mode() string { return m.mode }

// Detect implements Module. It never calls a model and never fails except
// on an input without a final user turn.
func (m *RulesModule) Detect(_ context.Context, in Input) (Decision, error) {
	text, ok := in.lastUser()
	if !ok {
		return Decision{}, fmt.Errorf("%w: the dialogue must end with a user turn", ErrInvalidInput)
	}
	d := Decision{TaxonomyVersion: m.tax.Version}
	name, ev := m.judge(in, text)
	if name == "" {
		return d, nil
	}
	et, _ := m.tax.Type(name)
	d.Rein, d.ErrorType, d.Category, d.RecoveryTool = true, et.Name, et.Category, et.RecoveryTool
	d.Evidence = SanitizeEvidence(ev)
	d.Reasoning = RenderPlan(et.RecoveryPlan, d.Evidence)
	return d, nil
}

// judge returns the first error type found, unsupported types first, and the
// evidence span.
func (m *RulesModule) judge(in Input, text string) (string, string) {
	lower := strings.ToLower(text)
	var bg bigrams
	bg.build(lower)
	// The evidence is the sentence holding the cue.
	span := func(loc []int) string {
		src := text
		if len(lower) != len(text) {
			src = lower
		}
		return sentenceAround(src, loc[0], loc[1])
	}
	dr := m.domains[in.Domain]
	active := func(name string) bool {
		et, ok := m.tax.Type(name)
		return ok && !et.HeldOut
	}
	if dr != nil {
		if active(TypeUnsupportedDomain) {
			if loc := findAny(dr.outside, lower, &bg); loc != nil {
				return TypeUnsupportedDomain, span(loc)
			}
		}
		if active(TypeUnsupportedAction) {
			if loc := findAny(dr.actions, lower, &bg); loc != nil {
				return TypeUnsupportedAction, span(loc)
			}
		}
		if len(dr.params) > 0 && active(TypeUnsupportedParameter) {
			cr := m.catalogRules(in.Domain, dr, in.Tools)
			for _, p := range cr.params {
				if p.context != nil && p.context.find(lower, &bg) == nil {
					continue
				}
				for off := 0; off < len(lower); {
					loc := p.phrases.find(lower[off:], &bg)
					if loc == nil {
						break
					}
					loc = []int{off + loc[0], off + loc[1]}
					if p.bad[lower[loc[0]:loc[1]]] && !negatedBefore(lower, loc[0]) {
						return TypeUnsupportedParameter, span(loc)
					}
					off = loc[1]
				}
			}
		}
	}
	// Ambiguity types, in taxonomy order.
	for _, et := range m.tax.ErrorTypes {
		if et.HeldOut || et.Category != CategoryAmbiguous {
			continue
		}
		loc := findAny(m.cues[et.Name], lower, &bg)
		if loc == nil && m.recall[et.Name] != nil {
			if loc = findAny(m.recall[et.Name], lower, &bg); loc != nil {
				return et.Name, span(loc)
			}
		}
		if loc == nil {
			continue
		}
		if m.mode == RulesRecall || m.confirm(et.Name, in, dr, text, lower, loc) {
			return et.Name, span(loc)
		}
	}
	return "", ""
}

// confirm applies the precise-mode checks that turn a cue into a detection.
func (m *RulesModule) confirm(name string, in Input, dr *domainRules, text, lower string, loc []int) bool {
	earlier := in.Dialogue[:len(in.Dialogue)-1]
	switch name {
	case TypeAnaphora:
		if anaphoraResolved(lower, loc) {
			return false
		}
		if len(earlier) == 0 {
			return true // nothing said before: nothing to refer to
		}
		if m.anaphoraSettled(dr, text, lower, loc) {
			return false
		}
		// The agent just put several entities of one kind before the user
		// and asked which; a bare reference does not choose among them.
		last := earlier[len(earlier)-1]
		if last.Role != RoleAgent || !choiceQuestion.MatchString(strings.ToLower(last.Text)) {
			return false
		}
		return m.entityCount(dr, last.Text) >= 2
	case TypeContradiction:
		return hasUser(earlier) // an earlier statement to conflict with
	default:
		return true
	}
}

// anaphoraResolved reports a reference resolved in the same breath ("that
// one from Boston") or by an antecedent earlier in the turn ("I booked a
// flight … cancel it").
func anaphoraResolved(lower string, loc []int) bool {
	return descriptorAfter.MatchString(lower[loc[1]:]) || inTurnAntecedent.MatchString(lower[:loc[0]])
}

// anaphoraSettled reports a reference that the user turn itself rules out
// as ambiguous once anything was said before: a plural ("cancel those"
// means the whole set), no entity shapes in the domain, or the user names
// the entity.
func (m *RulesModule) anaphoraSettled(dr *domainRules, text, lower string, loc []int) bool {
	return pluralRef.MatchString(lower[loc[0]:loc[1]]) || dr == nil || len(dr.entities) == 0 || m.entityCount(dr, text) > 0
}

func hasUser(dialogue []Utterance) bool {
	for _, u := range dialogue {
		if u.Role == RoleUser {
			return true
		}
	}
	return false
}

// NeedsContext implements ContextFree. Only two precise-mode checks read the
// earlier dialogue: an anaphora cue not settled by the turn's own words
// (are several entities the agent just listed in play?) and a contradiction
// cue (is there an earlier user statement?). It repeats judge's ambiguity
// scan and answers true only when the first cue judge would confirm is one
// of those two and the dialogue given can decide otherwise than the full
// one: every other decision reads the user turn alone. Given fewer agent
// replies, the dialogue has no fewer earlier user turns and is empty only
// if the full one may be, which the checks below rely on. In recall mode
// nothing reads the earlier dialogue.
func (m *RulesModule) NeedsContext(in Input) bool {
	if m.mode == RulesRecall {
		return false
	}
	text, ok := in.lastUser()
	if !ok {
		return true
	}
	earlier := in.Dialogue[:len(in.Dialogue)-1]
	lower := strings.ToLower(text)
	var bg bigrams
	bg.build(lower)
	for _, et := range m.tax.ErrorTypes {
		if et.HeldOut || et.Category != CategoryAmbiguous {
			continue
		}
		loc := findAny(m.cues[et.Name], lower, &bg)
		if loc == nil {
			continue
		}
		switch et.Name {
		case TypeAnaphora:
			if anaphoraResolved(lower, loc) || len(earlier) > 0 && m.anaphoraSettled(m.domains[in.Domain], text, lower, loc) {
				continue // confirm says no whatever the agent said
			}
			return true
		case TypeContradiction:
			if !hasUser(earlier) {
				continue // none in the full dialogue either
			}
			return true
		default:
			return false // confirmed whatever was said before
		}
	}
	return false
}

// entityCount returns the largest number of distinct ids of one entity
// kind in text.
func (m *RulesModule) entityCount(dr *domainRules, text string) int {
	var ids [8][]string // per kind; small, no map allocation
	best := 0
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		tok := strings.TrimPrefix(text[start:end], "#")
		start = -1
		if len(tok) < 4 || len(tok) > 24 || !strings.ContainsAny(tok, "0123456789") {
			return
		}
		for k, re := range dr.entities {
			if k >= len(ids) || !re.MatchString(tok) {
				continue
			}
			for _, seen := range ids[k] {
				if seen == tok {
					return
				}
			}
			ids[k] = append(ids[k], tok)
			if len(ids[k]) > best {
				best = len(ids[k])
			}
			return
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '#' {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(text))
	return best
}

// negatedBefore reports a negation just before position i ("not paypal",
// "no first class", "don't want first class").
func negatedBefore(lower string, i int) bool {
	from := i - 24
	if from < 0 {
		from = 0
	}
	w := lower[from:i]
	return strings.Contains(w, "not ") || strings.Contains(w, "n't ") || strings.Contains(w, "no ") || strings.Contains(w, "without ")
}

// catalogRules returns the parameter rules for one tool catalogue, built once.
func (m *RulesModule) catalogRules(domain string, dr *domainRules, tools []llm.Tool) *catalogRules {
	var h maphash.Hash
	h.SetSeed(m.seed)
	for _, t := range tools {
		h.WriteString(t.Name)
		h.WriteByte(0)
		h.Write(t.Parameters)
		h.WriteByte(0)
	}
	key := catalogKey{domain: domain, hash: h.Sum64()}
	m.mu.RLock()
	cr := m.catalog[key]
	m.mu.RUnlock()
	if cr != nil {
		return cr
	}
	cr = buildCatalogRules(dr, tools)
	m.mu.Lock()
	if len(m.catalog) > 1024 { // bounded: catalogues are per tenant and domain
		m.catalog = map[catalogKey]*catalogRules{}
	}
	m.catalog[key] = cr
	m.mu.Unlock()
	return cr
}

func buildCatalogRules(dr *domainRules, tools []llm.Tool) *catalogRules {
	cr := &catalogRules{}
	for i, p := range dr.params {
		enum, present := toolEnum(tools, p.Parameter)
		if !present {
			continue // the agent's tools have no such parameter
		}
		allowed := map[string]bool{}
		for _, v := range enum {
			allowed[v] = true
		}
		if len(enum) == 0 {
			for _, v := range p.Allowed {
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

// toolEnum finds the parameter in the tools' JSON Schemas (at any depth) and
// returns the union of its enums; present reports whether any tool has it.
func toolEnum(tools []llm.Tool, param string) (enum []string, present bool) {
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
		})
	}
	return enum, present
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

// sentenceAround widens [start, end) to the sentence that holds it.
func sentenceAround(s string, start, end int) string {
	for start > 0 && !strings.ContainsRune(".!?\n;", rune(s[start-1])) {
		start--
	}
	for end < len(s) && !strings.ContainsRune(".!?\n;", rune(s[end])) {
		end++
	}
	return strings.TrimSpace(s[start:end])
}
