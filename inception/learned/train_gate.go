package learned

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"

	"github.com/reinception/rein/inception"
)

// Featurizer gives a classifier's features of the user turn that ends in
// (read with its dialogue and tools as the featurizer needs). The rules
// module supplies them (rules.Module's GateFeaturizer and
// TypedFeaturizer): the features are its signals.
type Featurizer interface {
	Features(in inception.Input) []Feature
}

// TypedFeaturizer is the typed classifier's featurizer: its features, and
// whether the precise rules already activate on the turn (the threshold
// counts the clean turns they miss only).
type TypedFeaturizer interface {
	Featurizer
	Fires(in inception.Input) bool
}

// GateTrainConfig configures TrainGate. Zero values take the defaults.
type GateTrainConfig struct {
	Taxonomy *inception.Taxonomy // default DefaultTaxonomy(); gives the class order
	Sources  []string            // recorded in the model: the labelled files used
	Epochs   int                 // full-batch gradient steps (default 400)
	L2       float64             // weight penalty (default 0.002)
	Rate     float64             // step size (default 1)
	MinCount int                 // a feature in fewer training turns is dropped (default 2)
	Folds    int                 // cross-validation folds choosing the threshold (default 5)
	// TargetRecall is the share of erroneous turns the classifier alone
	// must pass in cross-validation; the threshold is the highest that
	// does (default 0.97).
	TargetRecall float64
}

func (c *GateTrainConfig) defaults() {
	if c.Taxonomy == nil {
		c.Taxonomy = inception.DefaultTaxonomy()
	}
	if c.Epochs == 0 {
		c.Epochs = 400
	}
	if c.L2 == 0 {
		c.L2 = 0.002
	}
	if c.Rate == 0 {
		c.Rate = 1
	}
	if c.MinCount == 0 {
		c.MinCount = 2
	}
	if c.Folds == 0 {
		c.Folds = 5
	}
	if c.TargetRecall == 0 {
		c.TargetRecall = 0.97
	}
}

// TrainGate fits the gate's classifier on labelled turns: a multinomial
// logistic regression (clean and each error type present) over the
// features f gives (the rules' gate features), by full-batch gradient descent from zero weights in a
// fixed order, so the same examples and config give the same weights. The
// threshold is chosen by cross-validation on the same examples (folds by a
// hash of each id): the highest score at which the held-out folds'
// erroneous turns are passed at TargetRecall.
func TrainGate(examples []inception.Example, f Featurizer, cfg GateTrainConfig) (*GateModel, error) {
	cfg.defaults()
	if cfg.TargetRecall <= 0 || cfg.TargetRecall > 1 || cfg.Folds < 2 || cfg.Epochs < 1 || cfg.L2 < 0 || cfg.MinCount < 1 {
		return nil, fmt.Errorf("%w: gate training: target recall %v (want (0, 1]), %d folds (want 2 or more), %d epochs, L2 %v, min count %d",
			inception.ErrInvalidConfig, cfg.TargetRecall, cfg.Folds, cfg.Epochs, cfg.L2, cfg.MinCount)
	}
	classes := []string{inception.CleanClass}
	for _, et := range cfg.Taxonomy.ErrorTypes {
		if slices.ContainsFunc(examples, func(e inception.Example) bool { return e.Class() == et.Name }) {
			classes = append(classes, et.Name)
		}
	}
	data := make([]gateRow, 0, len(examples))
	for _, e := range examples {
		_, ok := e.Input.LastUser()
		if !ok {
			return nil, fmt.Errorf("%w: training turn %s does not end with a user turn", inception.ErrInvalidInput, e.ID)
		}
		y := slices.Index(classes, e.Class())
		if y < 0 {
			return nil, fmt.Errorf("%w: training turn %s has type %q, not in the taxonomy", inception.ErrInvalidInput, e.ID, e.ErrorType)
		}
		feats := f.Features(e.Input)
		data = append(data, gateRow{id: e.ID, feats: feats, y: y})
	}
	if len(classes) < 2 || !slices.ContainsFunc(data, func(r gateRow) bool { return r.y == 0 }) {
		return nil, fmt.Errorf("%w: gate training needs clean and erroneous turns", inception.ErrInvalidInput)
	}

	// Cross-validation: each turn scored by a model that never saw it.
	var errScores, cleanScores []float64
	for k := 0; k < cfg.Folds; k++ {
		var train, held []gateRow
		for _, r := range data {
			if foldOf(r.id, cfg.Folds) == k {
				held = append(held, r)
			} else {
				train = append(train, r)
			}
		}
		if len(held) == 0 {
			continue
		}
		g := fitGate(train, classes, cfg)
		for _, r := range held {
			s := 1 - softmax(g.logits(r.feats))[0]
			if r.y == 0 {
				cleanScores = append(cleanScores, s)
			} else {
				errScores = append(errScores, s)
			}
		}
	}
	if len(errScores) == 0 {
		return nil, fmt.Errorf("%w: gate training needs erroneous turns", inception.ErrInvalidInput)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(errScores)))
	need := int(math.Ceil(cfg.TargetRecall*float64(len(errScores)))) - 1
	// Rounded down, so the turn that set it still passes.
	threshold := max(math.Floor(errScores[min(need, len(errScores)-1)]*1e6)/1e6, 1e-6)
	g := fitGate(data, classes, cfg)
	g.Threshold = threshold
	g.Training = GateTraining{
		Sources: cfg.Sources, Examples: len(data), Epochs: cfg.Epochs, L2: cfg.L2, MinCount: cfg.MinCount,
		Folds: cfg.Folds, TargetRecall: cfg.TargetRecall,
		CVErroneous: round6(passShare(errScores, threshold)), CVClean: round6(passShare(cleanScores, threshold)),
	}
	return g, g.Validate()
}

// gateRow is one training turn: its features and class index.
type gateRow struct {
	id    string
	feats []Feature
	y     int
}

func foldOf(id string, folds int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(folds))
}

func passShare(scores []float64, threshold float64) float64 {
	if len(scores) == 0 {
		return 0
	}
	n := 0
	for _, s := range scores {
		if s >= threshold {
			n++
		}
	}
	return float64(n) / float64(len(scores))
}

// fitGate runs the gradient descent on rows and returns the model,
// weights rounded to six decimals (those all zero then dropped), so a
// model file is stable.
func fitGate(rows []gateRow, classes []string, cfg GateTrainConfig) *GateModel {
	count := map[string]int{}
	for _, r := range rows {
		for _, f := range r.feats {
			count[f.Name]++
		}
	}
	var vocab []string
	for n, c := range count {
		if c >= cfg.MinCount {
			vocab = append(vocab, n)
		}
	}
	sort.Strings(vocab)
	index := make(map[string]int, len(vocab))
	for i, n := range vocab {
		index[n] = i
	}
	type entry struct {
		j int
		v float64
	}
	xs := make([][]entry, len(rows))
	for i, r := range rows {
		for _, f := range r.feats {
			if j, ok := index[f.Name]; ok {
				xs[i] = append(xs[i], entry{j, f.Val})
			}
		}
		sort.Slice(xs[i], func(a, b int) bool { return xs[i][a].j < xs[i][b].j })
	}
	nc := len(classes)
	w := make([]float64, len(vocab)*nc)
	b := make([]float64, nc)
	gw := make([]float64, len(w))
	gb := make([]float64, nc)
	z := make([]float64, nc)
	inv := 1 / float64(len(rows))
	for epoch := 0; epoch < cfg.Epochs; epoch++ {
		clear(gw)
		clear(gb)
		for i, r := range rows {
			copy(z, b)
			for _, x := range xs[i] {
				for c := 0; c < nc; c++ {
					z[c] += x.v * w[x.j*nc+c]
				}
			}
			softmax(z)
			z[r.y] -= 1 // the gradient of the cross-entropy in the logits
			for c := 0; c < nc; c++ {
				gb[c] += z[c] * inv
			}
			for _, x := range xs[i] {
				for c := 0; c < nc; c++ {
					gw[x.j*nc+c] += x.v * z[c] * inv
				}
			}
		}
		for k := range w {
			w[k] -= cfg.Rate * (gw[k] + cfg.L2*w[k])
		}
		for c := range b {
			b[c] -= cfg.Rate * gb[c]
		}
	}
	g := &GateModel{Format: GateModelFormat, Classes: classes, Bias: make([]float64, nc), Weights: map[string][]float64{}}
	for c := range b {
		g.Bias[c] = round6(b[c])
	}
	for i, n := range vocab {
		ws := make([]float64, nc)
		nonzero := false
		for c := 0; c < nc; c++ {
			ws[c] = round6(w[i*nc+c])
			nonzero = nonzero || ws[c] != 0
		}
		if nonzero {
			g.Weights[n] = ws
		}
	}
	return g
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
