package learned

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/reinception/rein/inception"
)

// TypedTrainConfig configures TrainTyped. Zero values take the defaults.
type TypedTrainConfig struct {
	Taxonomy *inception.Taxonomy // default DefaultTaxonomy()
	Sources  []string            // recorded in the model
	Epochs   int                 // default 400
	L2       float64             // default 0.002
	MinCount int                 // default 2
	Folds    int                 // hash folds when the turns have fewer than two authors (default 5)
	// CleanBudget is the share of clean turns the classifier may add as
	// false activations in cross-validation (default 0.01).
	CleanBudget float64
	// GateRecall is the share of erroneous turns 1 − P(clean) must pass in
	// cross-validation; it sets GateThreshold (default 0.97).
	GateRecall float64
	// Catalogue says the featurizer's rules read a product catalogue
	// (rules.Config.Products), recorded in the model: serve it with the
	// catalogue it was trained with.
	Catalogue bool
}

func (c *TypedTrainConfig) defaults() {
	if c.Taxonomy == nil {
		c.Taxonomy = inception.DefaultTaxonomy()
	}
	if c.CleanBudget == 0 {
		c.CleanBudget = 0.01
	}
	if c.GateRecall == 0 {
		c.GateRecall = 0.97
	}
	if c.Folds == 0 {
		c.Folds = 5
	}
}

// typedRow is a training turn with whether the precise rules fire on it.
type typedRow struct {
	gateRow
	fired bool
}

// TrainTyped fits the typed classifier on labelled turns. The thresholds
// come from cross-validation on the same turns: folds by author
// (Example.Author) when there are two or more, so the threshold is chosen
// on wording the fold's model never saw, else by a hash of the id. The
// activation threshold is the lowest at which the turns the rules miss add
// no more than CleanBudget of the clean turns as false activations; the
// gate threshold is the highest at which 1 − P(clean) passes GateRecall of
// the erroneous turns.
func TrainTyped(examples []inception.Example, f TypedFeaturizer, cfg TypedTrainConfig) (*GateModel, error) {
	cfg.defaults()
	gc := GateTrainConfig{Taxonomy: cfg.Taxonomy, Epochs: cfg.Epochs, L2: cfg.L2, MinCount: cfg.MinCount, Folds: cfg.Folds}
	gc.defaults()
	if cfg.CleanBudget <= 0 || cfg.CleanBudget >= 1 || cfg.GateRecall <= 0 || cfg.GateRecall > 1 || gc.Folds < 2 || gc.Epochs < 1 || gc.L2 < 0 || gc.MinCount < 1 {
		return nil, fmt.Errorf("%w: typed training: clean budget %v (want (0, 1)), gate recall %v (want (0, 1]), %d folds, %d epochs, L2 %v, min count %d",
			inception.ErrInvalidConfig, cfg.CleanBudget, cfg.GateRecall, gc.Folds, gc.Epochs, gc.L2, gc.MinCount)
	}
	classes := []string{inception.CleanClass}
	for _, et := range cfg.Taxonomy.ErrorTypes {
		if slices.ContainsFunc(examples, func(e inception.Example) bool { return e.Class() == et.Name }) {
			classes = append(classes, et.Name)
		}
	}
	// A fixed order whatever order the turns come in.
	examples = slices.Clone(examples)
	slices.SortFunc(examples, func(a, b inception.Example) int { return strings.Compare(a.ID, b.ID) })
	rows := make([]typedRow, 0, len(examples))
	authors := map[string]int{}
	for _, e := range examples {
		_, ok := e.Input.LastUser()
		if !ok {
			return nil, fmt.Errorf("%w: training turn %s does not end with a user turn", inception.ErrInvalidInput, e.ID)
		}
		y := slices.Index(classes, e.Class())
		if y < 0 {
			return nil, fmt.Errorf("%w: training turn %s has type %q, not in the taxonomy", inception.ErrInvalidInput, e.ID, e.ErrorType)
		}
		rows = append(rows, typedRow{gateRow: gateRow{id: e.ID, feats: f.Features(e.Input), y: y}, fired: f.Fires(e.Input)})
		if _, ok := authors[e.Author]; !ok {
			authors[e.Author] = len(authors)
		}
	}
	if len(classes) < 2 || !slices.ContainsFunc(rows, func(r typedRow) bool { return r.y == 0 }) {
		return nil, fmt.Errorf("%w: typed training needs clean and erroneous turns", inception.ErrInvalidInput)
	}
	fold := func(i int) int { return foldOf(rows[i].id, gc.Folds) }
	folds, by := gc.Folds, "hash"
	if len(authors) >= 2 {
		folds, by = len(authors), "author"
		fold = func(i int) int { return authors[examples[i].Author] }
	}
	var added, cleanScores, errScores []float64
	nClean := 0
	for k := 0; k < folds; k++ {
		var train []gateRow
		var held []int
		for i, r := range rows {
			if fold(i) == k {
				held = append(held, i)
			} else {
				train = append(train, r.gateRow)
			}
		}
		if len(held) == 0 || len(train) == 0 {
			continue
		}
		g := fitGate(train, classes, gc)
		for _, i := range held {
			r := rows[i]
			p := softmax(g.logits(r.feats))
			best := slices.Max(p[1:])
			if r.y == 0 {
				nClean++
				cleanScores = append(cleanScores, 1-p[0])
				if !r.fired {
					added = append(added, best)
				}
				continue
			}
			errScores = append(errScores, 1-p[0])
		}
	}
	if len(errScores) == 0 || nClean == 0 {
		return nil, fmt.Errorf("%w: typed training needs clean and erroneous turns in its folds", inception.ErrInvalidInput)
	}
	cleanAdded := added
	sort.Sort(sort.Reverse(sort.Float64Slice(cleanAdded)))
	allow := int(math.Floor(cfg.CleanBudget * float64(nClean)))
	// Just above the first clean turn past the budget, and never below
	// 0.2 (a type that likely is no decision).
	threshold := 0.2
	if allow < len(cleanAdded) {
		threshold = max(round6(math.Floor(cleanAdded[allow]*1e6)/1e6+1e-6), threshold)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(errScores)))
	need := int(math.Ceil(cfg.GateRecall*float64(len(errScores)))) - 1
	gateThreshold := max(math.Floor(errScores[min(need, len(errScores)-1)]*1e6)/1e6, 1e-6)

	all := make([]gateRow, len(rows))
	for i, r := range rows {
		all[i] = r.gateRow
	}
	g := fitGate(all, classes, gc)
	g.Features, g.Threshold, g.GateThreshold = TypedFeatures, threshold, gateThreshold
	g.Training = GateTraining{
		Sources: cfg.Sources, Examples: len(rows), Epochs: gc.Epochs, L2: gc.L2, MinCount: gc.MinCount,
		Folds: folds, FoldsBy: by, TargetRecall: cfg.GateRecall, CleanBudget: cfg.CleanBudget,
		CVErroneous: round6(passShare(errScores, gateThreshold)), CVClean: round6(passShare(cleanScores, gateThreshold)),
		CVAddedClean: round6(float64(countAtLeast(cleanAdded, threshold)) / float64(nClean)),
		Catalogue:    cfg.Catalogue,
	}
	return g, g.Validate()
}

func countAtLeast(scores []float64, t float64) int {
	n := 0
	for _, s := range scores {
		if s >= t {
			n++
		}
	}
	return n
}
