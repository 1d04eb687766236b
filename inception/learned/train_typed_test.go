package learned_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// TestTrainTypedReproducible: the same turns and config give the same
// model file, byte for byte, whatever order the turns come in, and a file
// survives a parse and an encode.
func TestTrainTypedReproducible(t *testing.T) {
	a := checkReproducible(t, inceptiontest.Corpus(t, "dev2", "dev3"), func(ex []inception.Example) (*learned.GateModel, error) {
		return learned.TrainTyped(ex, typedFeaturizer(t, nil), learned.TypedTrainConfig{})
	})
	if a.Features != learned.TypedFeatures || a.Training.FoldsBy != "author" || a.Training.Folds != 2 {
		t.Errorf("features %q, folds %d by %q: want %q, 2 by author", a.Features, a.Training.Folds, a.Training.FoldsBy, learned.TypedFeatures)
	}
}

// TestTypedModelFileIsCurrent: the shipped typed_model.json is what
// training on the splits it names gives (go generate ./inception/learned rebuilds
// it).
func TestTypedModelFileIsCurrent(t *testing.T) {
	shipped := learned.DefaultTypedModel()
	var splits []string
	for _, s := range shipped.Training.Sources {
		splits = append(splits, strings.TrimSuffix(s, ".jsonl"))
	}
	cfg := learned.TypedTrainConfig{Sources: shipped.Training.Sources, CleanBudget: shipped.Training.CleanBudget}
	var products *rules.ProductCatalogue
	if shipped.Training.Catalogue {
		products = testProducts(t)
		cfg.Catalogue = true
	}
	a, err := learned.TrainTyped(inceptiontest.Corpus(t, splits...), typedFeaturizer(t, products), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, "typed_model.json", a, shipped)
	if a.GateThreshold != shipped.GateThreshold {
		t.Errorf("typed_model.json gate threshold %v, retrained %v (run go generate ./inception/learned)", shipped.GateThreshold, a.GateThreshold)
	}
}

// TestTypedThresholdRespectsCleanBudget: the threshold chosen by
// cross-validation adds no more clean false activations there than the
// budget allows, by author folds and by hash folds (one author), and a
// larger budget never gives a higher threshold. The default run tries the
// smallest and the largest budget, REIN_LONG=1 one between as well.
func TestTypedThresholdRespectsCleanBudget(t *testing.T) {
	if s := learned.DefaultTypedModel().Training; s.CVAddedClean > s.CleanBudget || s.FoldsBy != "author" {
		t.Errorf("shipped model: %.4f of clean turns added in cross-validation by %s, budget %.4f", s.CVAddedClean, s.FoldsBy, s.CleanBudget)
	}
	one := inceptiontest.Corpus(t, "dev", "dev2")
	var last float64 = 2
	budgets := []float64{0.01, 0.2}
	if testutil.Long() {
		budgets = []float64{0.01, 0.05, 0.2}
	}
	for _, budget := range budgets {
		g, err := learned.TrainTyped(one, typedFeaturizer(t, nil), learned.TypedTrainConfig{CleanBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		s := g.Training
		if s.FoldsBy != "hash" || s.CVAddedClean > budget {
			t.Errorf("budget %v: %.4f of clean turns added in cross-validation by %s folds", budget, s.CVAddedClean, s.FoldsBy)
		}
		if g.Threshold > last {
			t.Errorf("budget %v: threshold %v above the smaller budget's %v", budget, g.Threshold, last)
		}
		last = g.Threshold
	}
	if _, err := learned.TrainTyped(one, typedFeaturizer(t, nil), learned.TypedTrainConfig{CleanBudget: 1}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("a clean budget of 1: %v, want ErrInvalidConfig", err)
	}
}

// TestTypedCatchesWhatTheRulesMiss: a model that never saw dev4's author
// (trained on the five others) activates with the gold type on dev4 turns
// the precise rules let through, product options the catalogue does not
// list, and explains itself with the user's sentence and the type's
// recovery plan.
func TestTypedCatchesWhatTheRulesMiss(t *testing.T) {
	g, err := learned.TrainTyped(inceptiontest.Corpus(t, "dev", "dev2", "dev3", "dev5", "dev6", "dev8"), typedFeaturizer(t, nil), learned.TypedTrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	precise, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	typed, err := rules.New(rules.Config{TypedModel: g})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ret-e813f012": "could you upgrade it to 64GB of RAM", // a RAM size the laptop has no option for
		"ret-c2729e5a": "are a size 10 and pinch my toes",     // a shoe size, weighed with "swapping … for an 11"
	}
	found := 0
	for _, e := range inceptiontest.Corpus(t, "dev4") {
		quote, ok := want[e.ID]
		if !ok {
			continue
		}
		found++
		if d, _ := precise.Detect(context.Background(), e.Input); d.Rein {
			t.Fatalf("%s: the rules now catch it (%s); pick a turn they miss", e.ID, d.ErrorType)
		}
		d, err := typed.Detect(context.Background(), e.Input)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Rein || d.ErrorType != e.ErrorType || !strings.Contains(d.Evidence, quote) || !strings.Contains(d.Reasoning, d.Evidence) {
			t.Errorf("%s: got rein %v %q, evidence %q, reasoning %q; want %s quoting %q", e.ID, d.Rein, d.ErrorType, d.Evidence, d.Reasoning, e.ErrorType, quote)
		}
	}
	if found != len(want) {
		t.Fatalf("found %d of the %d dev4 turns", found, len(want))
	}
}

// testProducts loads the τ-bench store's product catalogue (skipping when
// ../shared/taubench is missing, as testutil.TauBench does).
func testProducts(t testing.TB) *rules.ProductCatalogue {
	t.Helper()
	pc, err := rules.LoadProductCatalogue(testutil.TauBench(t))
	if err != nil {
		t.Fatal(err)
	}
	return pc
}
