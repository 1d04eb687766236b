package rules

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/planted"

	"github.com/reinception/rein/inception"

	"github.com/reinception/rein/internal/llm"
)

// Rules modes.
const (
	// Precise activates only on strong evidence (the rules module
	// used alone).
	Precise = "precise"
	// Recall is the cascade's gate: the unsupported checks, then a
	// looser version of each ambiguity check (rules_gate.go) that keeps
	// the signal, drops the step resolving it and reads the user turn
	// alone, so it passes nearly every erroneous turn and a share of clean
	// ones to the model and never needs the agent's replies.
	Recall = "recall"
)

// DefaultWindow is how many earlier utterances the rules module scans
// for the candidate entities a reference may point at (the agent's latest
// message that lists any, within the window).
const DefaultWindow = 6

// Config configures the rules module.
type Config struct {
	Taxonomy *inception.Taxonomy // default DefaultTaxonomy()
	Mode     string              // Precise (default) or Recall
	Window   int                 // default DefaultWindow
	// GateModel is the gate's classifier (Recall only): a turn the
	// gate's rules hold back still passes when it scores at least the
	// model's threshold. Nil leaves the gate to its rules alone;
	// DefaultGateModel() is the one trained on the corpus's dev splits.
	GateModel *learned.GateModel
	// TypedModel is the precise mode's learned complement (typed_model.go;
	// Features TypedFeatures): when the rules find nothing, its likeliest
	// error type activates if its probability reaches the model's
	// threshold. Nil leaves the rules alone; DefaultTypedModel() is the
	// one trained on the corpus's dev splits.
	TypedModel *learned.GateModel
	// Products is the store's product catalogue (rules_options.go): with
	// it an option value the named product does not come in is an
	// unsupported parameter. Nil leaves the option values unchecked.
	Products *ProductCatalogue
	// MemoBytes bounds what the module keeps of the messages it has read
	// (memo.go), so that each message of a conversation is analysed once:
	// 0 is DefaultMemoBytes, negative keeps nothing.
	MemoBytes int
}

// Module is the offline inception module: no model, grounded in the
// dialogue, the agent's tool catalogue and the taxonomy file. It decides in
// the corpus tie-break order (unsupported domain, action, parameter; then
// contradiction, multiple interpretation, anaphora) from these signals:
//
//   - unsupported domain: the taxonomy's per-domain cues;
//   - unsupported action: the domain's unsupported operations, skipped when
//     a tool of the agent's catalogue names the operation (rules_catalogue.go);
//   - unsupported parameter: a phrase naming a value outside the enum of the
//     parameter in the tools' JSON Schemas, or outside the id kinds their
//     descriptions show, framed by the user turn or the agent's question;
//   - contradiction: conflicts within the turn (consent then refusal, keep
//     and cancel, "not X" then X) and with the user's earlier turns (what
//     they ruled out, a passenger count, a claim they never made), an
//     allowed correction and a complaint about the agent excepted
//     (rules_contradiction.go);
//   - multiple interpretation: two actions joined by "or", an open choice,
//     a noun phrase or a vague comparative that fits several listed
//     entities, an upgrade with several cabins above (rules_interpretation.go);
//   - anaphora: a pronoun, demonstrative or "one"-substitute whose kind has
//     several candidates in play, counted from what the agent listed in
//     prose, bullets or a summarised tool result, or stated as a count
//     ("two upcoming trips"); a descriptor after it ("that one in economy")
//     resolves it only when it names exactly one listed entity; a
//     possessive among several named people (rules_anaphora.go,
//     rules_entities.go).
//
// Signals read from the shape of the tool schemas rather than from phrase
// lists: two values of one enum asked for at once (a conflict), a cabin per
// leg where the cabin is one value per reservation, a chain of legs where
// the trip types are one way and round trip, an exchange into another
// product (rules_catalogue.go).
//
// Structural signals (rules_structural.go), found on dev3, a second author's
// wording: a list the agent gives without an intro word, the agent's own
// count of one, a descriptor several listed entities share ("the one on
// the 24th"), a property no listed entity has, "one of them", a pronoun
// before a particle or after a phrasal action ending in "of"; two ranking
// criteria of different kinds; opposite actions, travelling alone next to
// a party, a thing asked for and refused in one turn, one way then a
// return, an item excluded and included; a chain of arrows.
//
// Fourth-pass precision (dev4, a third author's clean turns): a reference
// after a noun phrase of the same turn that picks one entity (a rank and an
// entity noun, or a number and unit only one listed entity has) is
// resolved; "either" under a negation is neither, not a choice handed over.
//
// Each decision quotes the sentence holding its evidence. Everything is
// compiled at construction (and once per tool catalogue) and the hot
// expressions carry a literal prefilter, so a turn costs microseconds.
type Module struct {
	tax    *inception.Taxonomy
	mode   string
	window int

	cues      map[string][]cue      // error type → its cues (non-held-out)
	ambiguous []inception.ErrorType // non-held-out ambiguous types in tie-break order
	domains   map[string]*domainRules

	gateModel  *learned.GateModel // Recall: the gate's classifier, nil for none
	typedModel *learned.GateModel // Precise: the typed classifier, nil for none
	// modelVersion is every decision's ModelVersion: the classifier's.
	modelVersion string
	options      *optionRules // the product catalogue's options, nil for none

	// memo keeps what is derived from one message (memo.go).
	memo *memo

	// lits indexes the literals of the cues above, so that one pass
	// over a turn serves every cue's prefilter (textScan).
	lits *litIndex

	seed    maphash.Seed
	mu      sync.RWMutex
	catalog map[catalogKey]*catalogRules
	// seen finds a catalogue passed before by its backing array, so that
	// a turn does not hash the whole catalogue (several KB of JSON
	// Schemas) each time a check asks for its rules.
	seen map[catalogIdent]seenCatalog
}

// catalogIdent is a tool slice's identity: its domain, first element and
// length.
type catalogIdent struct {
	domain string
	first  *llm.Tool
	n      int
}

// seenCatalog is a catalogue met before: its tools as they were (the
// headers only) and its rules.
type seenCatalog struct {
	tools []llm.Tool
	cr    *catalogRules
}

type domainRules struct {
	entities    []*regexp.Regexp
	entityNames []string
	actions     []actionGroup
	outside     []cue
	gate        []cue // the gate's looser cues (DomainNote.GateCues)
	params      []inception.ParameterNote
	contexts    []*cue // per params entry, may be nil
}

type catalogKey struct {
	domain string
	hash   uint64
}

// actionGroup is one operation no default tool performs, with the words
// that would name it in a catalogue that does.
type actionGroup struct {
	cues    []cue
	objects []string
}

// catalogRules is what depends on the agent's tool schemas: the phrases
// naming a parameter value the tools do not accept, and which of the
// domain's unsupported operations some tool performs after all.
type catalogRules struct {
	params  []paramRule
	covered []bool   // per domainRules.actions
	cabins  []string // the cabin enum, lowest first as the schema lists it
	// enums are the string enums of the tools' parameters with two or
	// more values of four letters or more, underscores read as spaces,
	// longest value first.
	enums [][]string
	// tripTypes is the flight_type enum ("one_way", "round_trip"): a
	// chain of three or more legs fits none of them unless it lists
	// multi-city.
	tripTypes []string
	// exchange: the tools exchange items for other options of the same
	// product (never for another product).
	exchange bool
	hasTools bool // the catalogue has a tool at all
}

type paramRule struct {
	phrases cue
	bad     map[string]bool // phrase → unsupported
	context *cue
}

// descriptorAfter marks a reference that the user resolves in the same
// breath ("that one from Boston", "the flight on May 20").
var descriptorAfter = regexp.MustCompile(`^\s*(?:from|to|on|with|for|which|that|in|at|departing|arriving|booked|going|leaving|ending|starting|ordered|i (?:booked|ordered|bought|mentioned))\b`)

// Validate reports an unusable config (the zero value is usable).
func (cfg Config) Validate() error {
	switch cfg.Mode {
	case "", Precise, Recall:
	default:
		return fmt.Errorf("%w: rules mode %q is not %s or %s", inception.ErrInvalidConfig, cfg.Mode, Precise, Recall)
	}
	if cfg.Window < 0 {
		return fmt.Errorf("%w: rules window %d is negative", inception.ErrInvalidConfig, cfg.Window)
	}
	if cfg.GateModel != nil && cfg.GateModel.Features != "" {
		return fmt.Errorf("%w: the gate's classifier has %q features, want the gate's", inception.ErrInvalidConfig, cfg.GateModel.Features)
	}
	if cfg.TypedModel != nil && cfg.TypedModel.Features != learned.TypedFeatures {
		return fmt.Errorf("%w: the typed classifier has %q features, want %q", inception.ErrInvalidConfig, cfg.TypedModel.Features, learned.TypedFeatures)
	}
	for _, g := range []*learned.GateModel{cfg.GateModel, cfg.TypedModel} {
		if g != nil {
			if err := g.Validate(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (cfg *Config) defaults() {
	if cfg.Taxonomy == nil {
		cfg.Taxonomy = inception.DefaultTaxonomy()
	}
	if cfg.Mode == "" {
		cfg.Mode = Precise
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MemoBytes == 0 {
		cfg.MemoBytes = DefaultMemoBytes
	}
}

// New compiles the rules module.
func New(cfg Config) (*Module, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	m := &Module{
		tax: cfg.Taxonomy, mode: cfg.Mode, window: cfg.Window,
		cues:    map[string][]cue{},
		domains: map[string]*domainRules{}, seed: maphash.MakeSeed(), catalog: map[catalogKey]*catalogRules{},
		seen: map[catalogIdent]seenCatalog{}, memo: newMemo(cfg.MemoBytes),
	}
	for _, et := range cfg.Taxonomy.ErrorTypes {
		if et.HeldOut {
			continue
		}
		m.cues[et.Name] = compileCues(et.Cues)
	}
	m.ambiguous = ambiguityOrder(cfg.Taxonomy)
	m.options = compileOptions(cfg.Products)
	if cfg.Mode == Recall {
		m.gateModel = cfg.GateModel
		if m.gateModel != nil {
			m.modelVersion = "gate@" + m.gateModel.Version()
		}
	} else {
		m.typedModel = cfg.TypedModel
		if m.typedModel != nil {
			m.modelVersion = "typed@" + m.typedModel.Version()
		}
	}
	for name, d := range cfg.Taxonomy.Domains {
		dr := &domainRules{params: d.Parameters}
		for _, e := range d.Entities {
			dr.entities = append(dr.entities, regexp.MustCompile(e.Pattern))
			dr.entityNames = append(dr.entityNames, strings.ToLower(e.Name))
		}
		for _, g := range d.UnsupportedActions {
			dr.actions = append(dr.actions, actionGroup{cues: compileCues(g.Cues), objects: g.Objects})
		}
		dr.outside = groupCues(d.UnsupportedDomains)
		if cfg.Mode == Recall {
			dr.gate = compileCues(d.GateCues)
		}
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
	m.lits = newLitIndex(m.indexedCues())
	return m, nil
}

// indexedCues are the cues compiled with the module, in a fixed order
// (error types and domains by name): the literal index holds them.
func (m *Module) indexedCues() []*cue {
	var out []*cue
	add := func(cs []cue) {
		for i := range cs {
			out = append(out, &cs[i])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.cues)) {
		add(m.cues[name])
	}
	for _, name := range slices.Sorted(maps.Keys(m.domains)) {
		dr := m.domains[name]
		add(dr.outside)
		add(dr.gate)
		for i := range dr.actions {
			add(dr.actions[i].cues)
		}
		for _, c := range dr.contexts {
			if c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func groupCues(groups []inception.CueGroup) []cue {
	var cues []string
	for _, g := range groups {
		cues = append(cues, g.Cues...)
	}
	return compileCues(cues)
}

// windowed returns the input with only the last Window earlier utterances,
// where references look for candidates.
func (m *Module) windowed(in inception.Input) inception.Input {
	if n := len(in.Dialogue) - 1 - m.window; n > 0 {
		in.Dialogue = in.Dialogue[n:]
	}
	return in
}

// ambiguityOrder returns the taxonomy's ambiguous types, held-out ones
// left out, in the corpus tie-break order (a conflict is settled before a
// reading, a reading before a reference); a provider's own types follow in
// file order.
func ambiguityOrder(t *inception.Taxonomy) []inception.ErrorType {
	rank := map[string]int{inception.TypeContradiction: 1, inception.TypeMultipleInterpretation: 2, inception.TypeAnaphora: 3}
	var out []inception.ErrorType
	for _, et := range t.ErrorTypes {
		if !et.HeldOut && et.Category == inception.CategoryAmbiguous {
			out = append(out, et)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank[out[i].Name], rank[out[j].Name]
		if ri == 0 {
			ri = 99
		}
		if rj == 0 {
			rj = 99
		}
		return ri < rj
	})
	return out
}

// Name implements Module.
func (m *Module) Name() string { return inception.ModuleRules }

// Mode returns Precise or Recall.
func (m *Module) Mode() string { return m.mode }

// Instant implements inception.Instant: Detect reads no context.
func (m *Module) Instant() bool { return true }

// Detect implements Module. It never calls a model and never fails except
// on an input without a final user turn.
func (m *Module) Detect(_ context.Context, in inception.Input) (inception.Decision, error) {
	text, ok := in.LastUser()
	if !ok {
		return inception.Decision{}, fmt.Errorf("%w: the dialogue must end with a user turn", inception.ErrInvalidInput)
	}
	d := inception.Decision{TaxonomyVersion: m.tax.Version, ModelVersion: m.modelVersion}
	name, ev, _ := m.judge(in, text)
	if name == "" {
		return d, nil
	}
	et, _ := m.tax.Type(name)
	d.Rein, d.ErrorType, d.Category, d.RecoveryTool = true, et.Name, et.Category, et.RecoveryTool
	// A model's evidence's bar, but for sentences: a span that names a tool
	// or gives the agent orders leaves the slot generic.
	// The span is checked as the user wrote it and as it will be planted
	// (cleaned and capped).
	tools := m.toolNames(in.Tools)
	bad := planted.EvidenceMisuse(ev, tools)
	if ev = planted.SanitizeEvidence(ev); bad == "" {
		bad = planted.EvidenceMisuse(ev, tools)
	}
	if bad != "" {
		ev, d.FailReason = "", bad+"; the evidence slot was left generic"
	}
	d.Evidence = ev
	d.Reasoning = planted.RenderPlan(et.RecoveryPlan, d.Evidence)
	if note := m.optionNote(in, name, text); note != "" {
		d.Reasoning += " " + note
	}
	return d, nil
}

// toolNames are the agent's tools and the taxonomy's recovery tools.
func (m *Module) toolNames(tools []llm.Tool) []string {
	names := m.tax.RecoveryToolNames()
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

// judge returns the error type found and its evidence span, following the
// corpus tie-break: unsupported before ambiguous (domain, action,
// parameter), then contradiction, multiple interpretation and anaphora.
// ctxFree reports a decision taken before anything but the user turn was
// read, which the agent's replies cannot change.
func (m *Module) judge(in inception.Input, text string) (name, evidence string, ctxFree bool) {
	lower := strings.ToLower(text)
	var sc textScan
	sc.scan(lower, m.lits)
	// The evidence is the sentence holding the cue, quoted as the user
	// wrote it.
	span := func(loc []int) string {
		if len(lower) == len(text) {
			return sentenceAround(text, loc[0], loc[1])
		}
		if off := lowerOffsets(text); len(off) == len(lower)+1 {
			return sentenceAround(text, off[loc[0]], off[loc[1]])
		}
		return sentenceAround(lower, loc[0], loc[1])
	}
	dr := m.domains[in.Domain]
	if name, loc, free := m.unsupported(in, dr, lower, &sc); name != "" {
		return name, span(loc), free
	}
	if m.mode == Recall {
		// The gate reads the user's turns only: its checks are supersets
		// of the precise ambiguity checks without the agent's words.
		if name, loc := m.looseCheck(dr, in, lower, &sc); name != "" {
			return name, span(loc), true
		}
		if name, loc := m.gateClassify(dr, in, lower); name != "" {
			return name, span(loc), true
		}
		return "", "", true
	}
	for _, et := range m.ambiguous {
		var loc []int
		switch et.Name {
		case inception.TypeContradiction:
			loc = contradiction(m.memo, in, lower)
			if loc == nil {
				loc = countConflict(m.memo, in, lower) // rules_counts.go
			}
			if loc == nil {
				loc = sizeAgainstDirection(in, lower)
			}
			if loc == nil && dr != nil {
				loc = enumConflict(m.catalogRules(in.Domain, dr, in.Tools), lower)
			}
		case inception.TypeMultipleInterpretation:
			var cr *catalogRules
			if dr != nil {
				cr = m.catalogRules(in.Domain, dr, in.Tools)
			}
			loc = multipleInterpretation(m.memo, dr, cr, in, lower)
		case inception.TypeAnaphora:
			loc = anaphora(m.memo, dr, m.windowed(in), lower)
		default:
			// A provider's own ambiguity type: its cues decide.
			loc = findAny(m.cues[et.Name], lower, &sc)
		}
		if loc != nil {
			return et.Name, span(loc), false
		}
	}
	if name, loc := m.typedClassify(dr, in, lower); name != "" {
		return name, span(loc), false
	}
	return "", "", false
}

// unsupported checks the unsupported types in the tie-break order: the
// request lies outside the domain, no tool performs it, or a tool does but
// not with the value asked for. Only the parameter check may read the
// agent's last message (what it asked the user to choose), so free is
// false then.
func (m *Module) unsupported(in inception.Input, dr *domainRules, lower string, sc *textScan) (name string, loc []int, free bool) {
	if dr == nil {
		return "", nil, true
	}
	cr := m.catalogRules(in.Domain, dr, in.Tools)
	// What the user turn alone shows is the same for NeedsContext (the
	// turn alone) and Detect (the whole dialogue): derived once.
	text := in.Dialogue[len(in.Dialogue)-1].Text
	tu := m.memo.turn(cr, text, func() *turnUnsupported { return m.turnUnsupported(cr, dr, text, lower, sc) })
	if tu.name != "" {
		return tu.name, slices.Clone(tu.loc), true
	}
	if tu.inactive {
		return "", nil, true
	}
	// Then the values framed by the agent's question only.
	agent := ""
	if len(in.Dialogue) > 1 {
		agent = m.memo.agent(lastAgent(in.Dialogue[:len(in.Dialogue)-1])).lower
	}
	for _, h := range tu.agentFramed {
		if h.p.context.find(agent, nil) != nil {
			return inception.TypeUnsupportedParameter, slices.Clone(h.loc), false
		}
	}
	// The schemas' shape: a cabin per leg where the cabin is one value
	// per reservation, a chain of legs where the trip types are one way
	// and round trip, an exchange into another product.
	if tu.shape != nil {
		return inception.TypeUnsupportedParameter, slices.Clone(tu.shape), true
	}
	mm, pending := m.options.check(in, lower)
	if mm.loc != nil {
		return inception.TypeUnsupportedParameter, mm.loc, !mm.fromContext
	}
	// Nothing found: a value whose product only the dialogue names, or
	// one the agent's question could frame, needs the dialogue, which
	// the first pass did not.
	return "", nil, !pending && len(tu.agentFramed) == 0
}

// turnUnsupported is what unsupported finds in a user turn alone with one
// tool catalogue, in the tie-break order (domain, action, parameter): a
// decision (name), or the parts that need the dialogue too.
type turnUnsupported struct {
	name string
	loc  []int
	// inactive: the parameter type is held out, nothing more to check.
	inactive bool
	// agentFramed are the parameters, in order, whose context the turn
	// lacks but whose unsupported phrase it holds: a decision when the
	// agent's question gives the context.
	agentFramed []framedPhrase
	shape       []int // a schema-shape conflict (perLegEnum, legChain, …)
}

type framedPhrase struct {
	p   *paramRule
	loc []int
}

func (tu *turnUnsupported) bytes() int {
	return 128 + 48*len(tu.agentFramed)
}

// turnUnsupported computes unsupported's view of the user turn alone
// (text, lower-cased as lower).
func (m *Module) turnUnsupported(cr *catalogRules, dr *domainRules, text, lower string, sc *textScan) *turnUnsupported {
	active := func(name string) bool {
		et, ok := m.tax.Type(name)
		return ok && !et.HeldOut
	}
	hit := func(name string, loc []int) *turnUnsupported {
		return &turnUnsupported{name: name, loc: loc}
	}
	if active(inception.TypeUnsupportedDomain) {
		if loc := findAny(dr.outside, lower, sc); loc != nil {
			return hit(inception.TypeUnsupportedDomain, loc)
		}
	}
	if active(inception.TypeUnsupportedAction) {
		for i := range dr.actions {
			if cr.covered[i] {
				continue // the agent's tools do this after all
			}
			if loc := findAny(dr.actions[i].cues, lower, sc); loc != nil {
				return hit(inception.TypeUnsupportedAction, loc)
			}
		}
	}
	if !active(inception.TypeUnsupportedParameter) {
		return &turnUnsupported{inactive: true}
	}
	if loc := findAny(m.cues[inception.TypeUnsupportedParameter], lower, sc); loc != nil && cr.hasTools {
		return hit(inception.TypeUnsupportedParameter, loc)
	}
	// First the values the user turn itself frames as a payment (or the
	// parameter's context); those it does not frame wait for the agent's
	// question.
	tu := &turnUnsupported{}
	for i := range cr.params {
		p := &cr.params[i]
		userCtx := p.context == nil || p.context.find(lower, sc) != nil
		// The gate takes any such phrase: it reads no agent words.
		if userCtx || m.mode == Recall {
			if loc := p.badPhrase(lower, sc); loc != nil {
				return hit(inception.TypeUnsupportedParameter, loc)
			}
			continue
		}
		if loc := p.badPhrase(lower, sc); loc != nil {
			tu.agentFramed = append(tu.agentFramed, framedPhrase{p: p, loc: loc})
		}
	}
	if loc := perLegEnum(cr, lower); loc != nil {
		tu.shape = loc
	} else if loc := legChain(cr, text); loc != nil {
		tu.shape = loc
	} else if loc := arrowChain(cr, text); loc != nil {
		tu.shape = loc
	} else if loc := otherProduct(cr, lower); loc != nil {
		tu.shape = loc
	}
	return tu
}

// badPhrase returns the first phrase naming a value the tools do not take,
// not negated, or nil.
func (p *paramRule) badPhrase(lower string, sc *textScan) []int {
	for off := 0; off < len(lower); {
		loc := p.phrases.find(lower[off:], sc)
		if loc == nil {
			return nil
		}
		loc = []int{off + loc[0], off + loc[1]}
		off = loc[1]
		if p.bad[lower[loc[0]:loc[1]]] && !negatedBefore(lower, loc[0]) {
			return loc
		}
	}
	return nil
}

// NeedsContext implements ContextFree. The gate (Recall) reads the
// user's turns only and never needs the agent's replies. In precise mode a
// decision needs them when a check that reads the agent's words could
// fire: an unsupported value framed only by the agent's question, a
// consent to what the agent proposed, a confirmed read-back, a comparative,
// an upgrade or a bare noun phrase among what the agent listed, or a
// reference the turn leaves open (rules_anaphora.go's openRefs and
// openProperties); or a check reading the user's earlier turns could fire,
// since the window of the full dialogue may hold fewer of them. An
// unsupported domain, action or value found in the user turn alone decides
// before any of them; every other check reads the user turn alone.
func (m *Module) NeedsContext(in inception.Input) bool {
	if m.mode == Recall {
		return false
	}
	text, ok := in.LastUser()
	if !ok {
		return true
	}
	lower := strings.ToLower(text)
	var sc textScan
	sc.scan(lower, m.lits)
	alone := inception.Input{Domain: in.Domain, Tools: in.Tools, Dialogue: in.Dialogue[len(in.Dialogue)-1:]}
	name, _, free := m.unsupported(alone, m.domains[in.Domain], lower, &sc)
	switch {
	case name != "" && free:
		return false // decided before anything else is read
	case !free:
		return true // a value only the agent's question frames
	}
	return m.readsAgent(in, text, lower)
}

// readsAgent reports whether a precise ambiguity check that reads the
// agent's words could fire on the turn, judged from the user turn alone
// (lower is text lower-cased).
func (m *Module) readsAgent(in inception.Input, text, lower string) bool {
	dr := m.domains[in.Domain]
	for _, et := range m.ambiguous {
		switch et.Name {
		case inception.TypeContradiction:
			if consentStart.MatchString(lower) && negatedVerb.MatchString(lower) || confirmStart.MatchString(lower) && number.MatchString(lower) {
				return true
			}
			// A read-back agreed to with an amount (otherQuantity).
			if (consentStart.MatchString(lower) || confirmStart.MatchString(lower)) && quantity.may(lower) && quantity.MatchString(lower) {
				return true
			}
			// The user's earlier turns: the stage's window of the full
			// dialogue may hold fewer of them than the dialogue given.
			if (claimRef.MatchString(lower) || denial.MatchString(lower) || returnAsked.MatchString(lower)) && hasUserTurn(in.Dialogue[:len(in.Dialogue)-1]) || contradictionFromUser(m.memo, in, lower) != nil || countConflict(m.memo, in, lower) != nil || sizeAsked(lower) {
				return true
			}
		case inception.TypeMultipleInterpretation:
			if comparativeChoice.MatchString(lower) || bareUpgradeRE.MatchString(lower) {
				return true
			}
			if _, ok := openNoun(lower); ok && !idInTurn(dr, text) {
				return true
			}
			// "my flight on the 24th": whether listed entities share it.
			if describedEntity(lower) && !idInTurn(dr, text) {
				return true
			}
		case inception.TypeAnaphora:
			if len(m.memo.openRefs(dr, text)) > 0 || len(openProperties(lower)) > 0 {
				return true
			}
			// "that one in economy": whether the words after it pick one
			// listed entity; "his …": whether the agent named several
			// people.
			if describedOneRef(lower) || possessiveRef.MatchString(lower) || len(theOneDescribed(lower)) > 0 {
				return true
			}
		}
	}
	return false
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
// A catalogue is known by the hash of its names and schemas; the same
// slice passed again, its tools' names and schemas still the very same
// strings and byte slices, is known by that alone.
func (m *Module) catalogRules(domain string, dr *domainRules, tools []llm.Tool) *catalogRules {
	var ident catalogIdent
	if len(tools) > 0 {
		ident = catalogIdent{domain: domain, first: &tools[0], n: len(tools)}
		m.mu.RLock()
		s, ok := m.seen[ident]
		m.mu.RUnlock()
		if ok && sameTools(s.tools, tools) {
			return s.cr
		}
	}
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
	if cr == nil {
		cr = buildCatalogRules(dr, tools)
		cr.covered = coveredActions(dr, tools)
		cr.cabins, _, _ = toolEnum(tools, "cabin")
		cr.enums = toolEnums(tools)
		cr.tripTypes, _, _ = toolEnum(tools, "flight_type")
		cr.exchange = hasTool(tools, "exchange_delivered_order_items") || hasTool(tools, "modify_pending_order_items")
		cr.hasTools = len(tools) > 0
	}
	m.mu.Lock()
	if len(m.catalog) > 1024 || len(m.seen) > 1024 { // bounded: catalogues are per tenant and domain
		m.catalog, m.seen = map[catalogKey]*catalogRules{}, map[catalogIdent]seenCatalog{}
	}
	m.catalog[key] = cr
	if ident.n > 0 {
		m.seen[ident] = seenCatalog{tools: slices.Clone(tools), cr: cr}
	}
	m.mu.Unlock()
	return cr
}

// sameTools reports whether b holds the very names and schemas a held
// (the same strings and byte slices, not equal copies): then the hash
// of b is a's.
func sameTools(a, b []llm.Tool) bool {
	for i := range a {
		if unsafe.StringData(a[i].Name) != unsafe.StringData(b[i].Name) || len(a[i].Name) != len(b[i].Name) ||
			unsafe.SliceData(a[i].Parameters) != unsafe.SliceData(b[i].Parameters) || len(a[i].Parameters) != len(b[i].Parameters) {
			return false
		}
	}
	return true
}

// lowerOffsets maps each byte offset of strings.ToLower(text), and its
// end, to the offset in text of the rune it came from. Lower-casing can
// change a rune's length (an invalid byte, such as a stray Windows-1252
// apostrophe, becomes U+FFFD; 'İ' grows; the Kelvin sign shrinks), and
// evidence is quoted from what the user wrote: ids keep their case.
func lowerOffsets(text string) []int {
	out := make([]int, 0, len(text)+8)
	for i, r := range text {
		for range utf8.RuneLen(unicode.ToLower(r)) {
			out = append(out, i)
		}
	}
	return append(out, len(text))
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
