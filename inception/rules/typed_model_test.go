package rules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
)

// TestTrainTypedReproducible: the same turns and config give the same
// model file, byte for byte, whatever order the turns come in, and a file
// survives a parse and an encode.
func TestTrainTypedReproducible(t *testing.T) {
	a := checkReproducible(t, corpusExamples(t, "dev2", "dev3"), func(ex []inception.Example) (*GateModel, error) {
		return TrainTyped(ex, TypedTrainConfig{})
	})
	if a.Features != TypedFeatures || a.Training.FoldsBy != "author" || a.Training.Folds != 2 {
		t.Errorf("features %q, folds %d by %q: want %q, 2 by author", a.Features, a.Training.Folds, a.Training.FoldsBy, TypedFeatures)
	}
}

// TestTypedModelFileIsCurrent: the shipped typed_model.json is what
// training on the splits it names gives (go generate ./inception rebuilds
// it).
func TestTypedModelFileIsCurrent(t *testing.T) {
	shipped := DefaultTypedModel()
	var splits []string
	for _, s := range shipped.Training.Sources {
		splits = append(splits, strings.TrimSuffix(s, ".jsonl"))
	}
	cfg := TypedTrainConfig{Sources: shipped.Training.Sources, CleanBudget: shipped.Training.CleanBudget}
	if shipped.Training.Catalogue {
		cfg.Products = testProducts(t)
	}
	a, err := TrainTyped(corpusExamples(t, splits...), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, "typed_model.json", a, shipped)
	if a.GateThreshold != shipped.GateThreshold {
		t.Errorf("typed_model.json gate threshold %v, retrained %v (run go generate ./inception)", shipped.GateThreshold, a.GateThreshold)
	}
}

// TestTypedThresholdRespectsCleanBudget: the threshold chosen by
// cross-validation adds no more clean false activations there than the
// budget allows, by author folds and by hash folds (one author), and a
// larger budget never gives a higher threshold.
func TestTypedThresholdRespectsCleanBudget(t *testing.T) {
	if s := DefaultTypedModel().Training; s.CVAddedClean > s.CleanBudget || s.FoldsBy != "author" {
		t.Errorf("shipped model: %.4f of clean turns added in cross-validation by %s, budget %.4f", s.CVAddedClean, s.FoldsBy, s.CleanBudget)
	}
	one := corpusExamples(t, "dev", "dev2")
	var last float64 = 2
	for _, budget := range []float64{0.01, 0.05, 0.2} {
		g, err := TrainTyped(one, TypedTrainConfig{CleanBudget: budget})
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
	if _, err := TrainTyped(one, TypedTrainConfig{CleanBudget: 1}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("a clean budget of 1: %v, want ErrInvalidConfig", err)
	}
}

// TestTypedCatchesWhatTheRulesMiss: a model that never saw dev4's author
// (trained on the five others) activates with the gold type on dev4 turns
// the precise rules let through, product options the catalogue does not
// list, and explains itself with the user's sentence and the type's
// recovery plan.
func TestTypedCatchesWhatTheRulesMiss(t *testing.T) {
	g, err := TrainTyped(corpusExamples(t, "dev", "dev2", "dev3", "dev5", "dev6", "dev8"), TypedTrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	typed, err := New(Config{TypedModel: g})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ret-e813f012": "could you upgrade it to 64GB of RAM", // a RAM size the laptop has no option for
		"ret-c2729e5a": "are a size 10 and pinch my toes",     // a shoe size, weighed with "swapping … for an 11"
	}
	found := 0
	for _, e := range corpusExamples(t, "dev4") {
		quote, ok := want[e.ID]
		if !ok {
			continue
		}
		found++
		if d, _ := rules.Detect(context.Background(), e.Input); d.Rein {
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

// TestTypedModelKinds: a typed model is refused as the gate's classifier
// and the gate's as the typed one (their features differ).
func TestTypedModelKinds(t *testing.T) {
	if _, err := New(Config{Mode: Recall, GateModel: DefaultTypedModel()}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("typed model as the gate's: %v", err)
	}
	if _, err := New(Config{TypedModel: DefaultGateModel()}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("gate model as the typed one: %v", err)
	}
	bad := *DefaultTypedModel()
	bad.Features = "words"
	if err := bad.Validate(); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("features %q: %v", bad.Features, err)
	}
}

// TestTypedHeldOutAuthor is the typed classifier's leave-one-author-out
// yardstick over the six dev authors (dev+dev2, dev3, dev4, dev5, dev6,
// dev8; never test): with it the rules' core recall never drops and its clean
// false activations grow by at most 6 points on any author, and its
// 1 − P(clean) ranks erroneous over clean turns better than the gate's
// classifier trained on the same turns. Figures as measured are logged
// (and in testdata/corpus/README.md). Under -race, where its ten trainings
// take minutes, only the newest author (dev6) is held out.
func TestTypedHeldOutAuthor(t *testing.T) {
	var scores []AuthorScore
	if raceEnabled {
		s, err := OutOfAuthor(context.Background(), corpusExamples(t, "dev", "dev2", "dev3", "dev4", "dev5", "dev8"), corpusExamples(t, "dev6"), TypedTrainConfig{})
		if err != nil {
			t.Fatal(err)
		}
		scores = []AuthorScore{s}
	} else {
		var err error
		scores, err = LeaveOneAuthorOut(context.Background(), corpusExamples(t, "dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev8"), TypedTrainConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if len(scores) != 6 {
			t.Fatalf("%d authors, want 6", len(scores))
		}
	}
	for _, s := range scores {
		t.Logf("held %s (%d turns, threshold %.3f): rules core %.3f mean %.3f clean FA %.3f; +typed core %.3f mean %.3f clean FA %.3f; AUC gate model %.3f, typed %.3f",
			s.Held, s.Turns, s.Threshold, s.Rules.CoreRecall, s.Rules.MeanRecall, s.Rules.CleanFalse,
			s.Combined.CoreRecall, s.Combined.MeanRecall, s.Combined.CleanFalse, s.AUCGate, s.AUCTyped)
		if s.Combined.CoreRecall < s.Rules.CoreRecall || s.Combined.CleanFalse > s.Rules.CleanFalse+0.06 {
			t.Errorf("held %s: core recall %.3f → %.3f, clean false activations %.3f → %.3f", s.Held, s.Rules.CoreRecall, s.Combined.CoreRecall, s.Rules.CleanFalse, s.Combined.CleanFalse)
		}
		if s.AUCTyped <= s.AUCGate {
			t.Errorf("held %s: typed AUC %.3f not above the gate model's %.3f", s.Held, s.AUCTyped, s.AUCGate)
		}
	}
}

// TestOutOfAuthorRefusesASharedAuthor: measuring on an author the models
// were trained on is refused, and the held-out authors are named whole.
func TestOutOfAuthorRefusesASharedAuthor(t *testing.T) {
	train := corpusExamples(t, "dev3")
	if _, err := OutOfAuthor(context.Background(), train, train[:5], TypedTrainConfig{}); !errors.Is(err, inception.ErrInvalidInput) {
		t.Errorf("held turns of a trained author: %v", err)
	}
	held := corpusExamples(t, "dev2")
	for i := range held {
		held[i].Author = "dev2"
	}
	held[len(held)-1].Author = "dev" // a name inside another author's
	s, err := OutOfAuthor(context.Background(), train, held, TypedTrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Held != "dev2+dev" || s.Turns != len(held) || len(s.Trained) != 1 {
		t.Errorf("held %q (%d turns), trained on %v", s.Held, s.Turns, s.Trained)
	}
}

// A rules module's decisions name its classifier by content: the shipped
// model's version, another for other weights, none without a model (the
// cascade's skipped turns carry the gate's: inception/llmmodule).
func TestDecisionsNameTheModelVersion(t *testing.T) {
	ctx := context.Background()
	in := inception.Input{Dialogue: []inception.Utterance{{Role: inception.RoleUser, Text: "hello there"}}}
	typed := DefaultTypedModel()
	v := typed.Version()
	if len(v) != len("sha256:")+12 || v[:7] != "sha256:" {
		t.Fatalf("version %q", v)
	}
	other := *typed
	other.Threshold /= 2
	if other.Version() == v {
		t.Error("another threshold, the same version")
	}
	withModel, err := New(Config{TypedModel: typed})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := withModel.Detect(ctx, in); err != nil || d.ModelVersion != "typed@"+v {
		t.Errorf("rules with the typed model: %q, %v", d.ModelVersion, err)
	}
	plain, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := plain.Detect(ctx, in); d.ModelVersion != "" {
		t.Errorf("rules without a model: %q", d.ModelVersion)
	}
}
