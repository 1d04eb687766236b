package rules

import (
	"strings"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
)

// gateClassify is the gate's learned half: the type the classifier finds
// and the span of the feature that weighed most for it, when the turn
// scores at least the threshold; the whole turn's first sentence stands
// in when no word feature carried weight.
func (m *Module) gateClassify(dr *domainRules, in inception.Input, lower string) (string, []int) {
	if m.gateModel == nil {
		return "", nil
	}
	v := m.gateModel.Judge(m.gateFeatures(dr, in, lower), func(name string) bool {
		et, ok := m.tax.Type(name)
		return ok && !et.HeldOut
	})
	if v.Class == "" || v.Score < m.gateModel.Threshold {
		return "", nil
	}
	if v.Span == nil {
		v.Span = []int{0, min(len(lower), 1)}
	}
	return v.Class, v.Span
}

// typedClassify is the precise module's learned complement: the likeliest
// allowed error type when its probability reaches the threshold, with a
// location in the user turn's sentence that weighed most for it (the sum
// of its features' pull towards the type against clean).
func (m *Module) typedClassify(dr *domainRules, in inception.Input, lower string) (string, []int) {
	g := m.typedModel
	if g == nil {
		return "", nil
	}
	feats := m.typedFeatures(dr, in, lower, true)
	p := g.Probabilities(feats)
	best := -1
	for c := 1; c < len(g.Classes); c++ {
		et, ok := m.tax.Type(g.Classes[c])
		if !ok || et.HeldOut {
			continue
		}
		if best < 0 || p[c] > p[best] {
			best = c
		}
	}
	if best < 0 || p[best] < g.Threshold {
		return "", nil
	}
	return g.Classes[best], weightiest(g, feats, best, lower)
}

// weightiest returns the span of the feature that pulled most towards
// class c inside the sentence of lower whose features pulled most.
func weightiest(g *learned.GateModel, feats []learned.Feature, c int, lower string) []int {
	sentence := func(at int) int {
		n := 0
		for i := 0; i < at && i < len(lower); i++ {
			if b := lower[i]; (b == '.' || b == '!' || b == '?' || b == '\n') && i+1 < len(lower) && (lower[i+1] == ' ' || lower[i+1] == '\n') {
				n++
			}
		}
		return n
	}
	sum := map[int]float64{}
	type pull struct {
		d    float64
		span []int
		s    int
	}
	var pulls []pull
	for _, f := range feats {
		w, ok := g.Weights[f.Name]
		if !ok || f.Span == nil {
			continue
		}
		p := pull{d: f.Val * (w[c] - w[0]), span: f.Span, s: sentence(f.Span[0])}
		sum[p.s] += p.d
		pulls = append(pulls, p)
	}
	if len(pulls) == 0 {
		return []int{0, min(len(lower), 1)}
	}
	bestS := pulls[0].s
	for s, v := range sum {
		if v > sum[bestS] || v == sum[bestS] && s < bestS {
			bestS = s
		}
	}
	var top *pull
	for i := range pulls {
		if pulls[i].s == bestS && (top == nil || pulls[i].d > top.d) {
			top = &pulls[i]
		}
	}
	return top.span
}

// GateFeaturizer returns the features the gate's classifier reads
// (gateFeatures), for training it (learned.TrainGate) and scoring turns
// with it outside the module.
func (m *Module) GateFeaturizer() learned.Featurizer { return gateFeaturizer{m} }

// TypedFeaturizer returns the features the typed classifier reads
// (typedFeatures) and whether the module's rules fire on a turn, for
// training it (learned.TrainTyped) and scoring turns with it.
func (m *Module) TypedFeaturizer() learned.TypedFeaturizer { return typedFeaturizer{m} }

type gateFeaturizer struct{ m *Module }

func (f gateFeaturizer) Features(in inception.Input) []learned.Feature {
	text, _ := in.LastUser()
	return f.m.gateFeatures(f.m.domains[in.Domain], in, strings.ToLower(text))
}

type typedFeaturizer struct{ m *Module }

func (f typedFeaturizer) Features(in inception.Input) []learned.Feature {
	text, _ := in.LastUser()
	return f.m.typedFeatures(f.m.domains[in.Domain], in, strings.ToLower(text), false)
}

func (f typedFeaturizer) Fires(in inception.Input) bool {
	text, _ := in.LastUser()
	name, _, _ := f.m.judge(in, text)
	return name != ""
}
