package rules

import (
	"strconv"
	"strings"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
)

// The typed classifier (typed_model.go) reads what the gate's classifier
// reads (gateFeatures: words, word pairs, the structural patterns) plus the
// rules' intermediate signals, which need the dialogue and the tool
// catalogue: each precise check's verdict taken on its own rather than
// first in the tie-break, the gate's loose verdict, how many candidate
// entities of the kind a reference needs the agent put in play, what the
// agent's last message offered, and conflicts with the user's earlier
// turns. These name kinds of evidence, not one author's words, so they are
// what may carry to a new author's wording. None of them changes a rule's
// decision: they are computed beside it.

// typedFeatures returns the typed classifier's features of the judged
// turn. missed says the precise rules already ran on it and found
// nothing (the module's own call, after its rules), so the verdicts of
// their checks are not computed again.
func (m *Module) typedFeatures(dr *domainRules, in inception.Input, lower string, missed bool) []learned.Feature {
	out := m.gateFeatures(dr, in, lower)
	// Word pairs left out: they carry one author's phrasing (measured
	// leave-one-author-out, they cost dev4 3.6 points of clean false
	// activations for no core recall; character 4-grams for typos gained
	// nothing either).
	k := 0
	for _, f := range out {
		if !strings.HasPrefix(f.Name, "b:") {
			out[k] = f
			k++
		}
	}
	out = out[:k]
	add := func(name string, span []int) {
		out = append(out, learned.Feature{Name: name, Span: span, Val: 1})
	}
	var sc textScan
	sc.scan(lower, m.lits)
	if !missed {
		if name, loc, _ := m.unsupported(in, dr, lower, &sc); name != "" {
			add("r:unsupported:"+name, loc)
		}
	}
	if name, loc := m.looseCheck(dr, in, lower, &sc); name != "" {
		add("r:loose:"+name, loc)
	}
	checked := missed && m.checksAll()
	if loc := againstEarlier(m.memo, in, lower); loc != nil {
		add("r:against_earlier", loc)
	}
	if dr == nil {
		return out
	}
	cr := m.catalogRules(in.Domain, dr, in.Tools)
	win := m.windowed(in)
	if !checked {
		if loc := contradiction(m.memo, in, lower); loc != nil {
			add("r:contradiction", loc)
		}
		if loc := enumConflict(cr, lower); loc != nil {
			add("r:enum_conflict", loc)
		}
		if loc := multipleInterpretation(m.memo, dr, cr, in, lower); loc != nil {
			add("r:multiple_interpretation", loc)
		}
		if loc := anaphora(m.memo, dr, win, lower); loc != nil {
			add("r:anaphora", loc)
		}
	}
	earlier := win.Dialogue[:len(win.Dialogue)-1]
	// The references of the turn and the candidates of their kind.
	refs := findRefs(lower)
	if len(refs) > 0 {
		most := 0
		for _, r := range refs {
			most = max(most, inPlay(m.memo, dr, earlier, refKind(lower[r[0]:r[1]])).count())
		}
		add("c:ref_candidates:"+bucket(most), refs[0])
	}
	agent := lastAgent(earlier)
	if agent == "" {
		add("c:no_agent", nil)
		return out
	}
	add("c:agent_lists:"+bucket(inPlay(m.memo, dr, earlier, "").count()), nil)
	if strings.Contains(agent, "?") {
		add("c:agent_asks", nil)
	}
	if listsOptions(strings.ToLower(agent)) {
		add("c:agent_options", nil)
	}
	if people(agent) >= 2 {
		add("c:agent_people", nil)
	}
	return out
}

// checksAll reports whether the precise mode runs all three default
// ambiguity checks (none of their types is held out).
func (m *Module) checksAll() bool {
	n := 0
	for _, et := range m.ambiguous {
		if defaultAmbiguity[et.Name] {
			n++
		}
	}
	return n == len(defaultAmbiguity)
}

// bucket folds a count into 0, 1 or 2+.
func bucket(n int) string {
	if n >= 2 {
		return "2+"
	}
	return strconv.Itoa(n)
}
