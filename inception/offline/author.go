package offline

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/rules"

	"github.com/reinception/rein/inception"
)

// AuthorScore is how the rules and their learned complements do on one
// author's turns with models that never saw that author: the precise
// rules alone and with the typed classifier, and the cascade's gate with
// its rules alone, with the gate's classifier, and with the typed model's
// 1 − P(clean) beside its rules. AUC is each score's ranking of erroneous
// over clean turns (the share of erroneous–clean pairs ordered right).
type AuthorScore struct {
	Held    string   `json:"held"`
	Trained []string `json:"trained_on"`
	Turns   int      `json:"turns"`

	Rules    AuthorFigures `json:"rules"`
	Combined AuthorFigures `json:"rules_typed"`
	// Threshold is the typed model's activation threshold, chosen on the
	// training authors for the clean budget.
	Threshold float64 `json:"threshold"`

	GateRules AuthorGate `json:"gate_rules"`
	GateModel AuthorGate `json:"gate_rules_gate_model"`
	GateTyped AuthorGate `json:"gate_rules_typed"`
	AUCGate   float64    `json:"auc_gate_model"`
	AUCTyped  float64    `json:"auc_typed"`
}

// AuthorFigures are a module's detection figures on one author's turns.
type AuthorFigures struct {
	CoreRecall float64 `json:"core_recall"`
	MeanRecall float64 `json:"mean_recall"`
	Precision  float64 `json:"precision"`
	CleanFalse float64 `json:"clean_false_activation"`
	ExactType  float64 `json:"exact_type"`
}

// AuthorGate is a gate's pass rates on one author's turns.
type AuthorGate struct {
	Erroneous float64 `json:"erroneous_pass"`
	Clean     float64 `json:"clean_pass"`
}

// LeaveOneAuthorOut trains the typed and the gate classifiers on every
// author but one and measures on that one, for each author of examples
// (Example.Author), in author order.
func LeaveOneAuthorOut(ctx context.Context, examples []inception.Example, cfg learned.TypedTrainConfig, products *rules.ProductCatalogue) ([]AuthorScore, error) {
	var authors []string
	for _, e := range examples {
		if !slices.Contains(authors, e.Author) {
			authors = append(authors, e.Author)
		}
	}
	sort.Strings(authors)
	if len(authors) < 2 {
		return nil, fmt.Errorf("%w: leave-one-author-out needs two or more authors, have %v", inception.ErrInvalidInput, authors)
	}
	var out []AuthorScore
	for _, h := range authors {
		var train, held []inception.Example
		for _, e := range examples {
			if e.Author == h {
				held = append(held, e)
			} else {
				train = append(train, e)
			}
		}
		s, err := OutOfAuthor(ctx, train, held, cfg, products)
		if err != nil {
			return nil, fmt.Errorf("held-out author %s: %w", h, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// OutOfAuthor trains on train and measures on held (which train must not
// share an author with). The rules read products, the store's catalogue
// (nil for none), while training and measuring.
func OutOfAuthor(ctx context.Context, train, held []inception.Example, cfg learned.TypedTrainConfig, products *rules.ProductCatalogue) (AuthorScore, error) {
	var s AuthorScore
	for _, e := range train {
		if !slices.Contains(s.Trained, e.Author) {
			s.Trained = append(s.Trained, e.Author)
		}
	}
	sort.Strings(s.Trained)
	var heldAuthors []string
	for _, e := range held {
		if slices.Contains(s.Trained, e.Author) {
			return s, fmt.Errorf("%w: turn %s's author %q is also trained on", inception.ErrInvalidInput, e.ID, e.Author)
		}
		if !slices.Contains(heldAuthors, e.Author) {
			heldAuthors = append(heldAuthors, e.Author)
		}
	}
	s.Held = strings.Join(heldAuthors, "+")
	s.Turns = len(held)
	if cfg.Taxonomy == nil {
		cfg.Taxonomy = inception.DefaultTaxonomy()
	}
	precise, err := rules.New(rules.Config{Taxonomy: cfg.Taxonomy, Products: products})
	if err != nil {
		return s, err
	}
	cfg.Catalogue = products != nil
	typed, err := learned.TrainTyped(train, precise.TypedFeaturizer(), cfg)
	if err != nil {
		return s, err
	}
	// The gate's classifier is trained as rein detect --train-gate does:
	// on the gate's features, which read no catalogue.
	gateFeatures, err := rules.New(rules.Config{Taxonomy: cfg.Taxonomy, Mode: rules.Recall})
	if err != nil {
		return s, err
	}
	gateModel, err := learned.TrainGate(train, gateFeatures.GateFeaturizer(), learned.GateTrainConfig{Taxonomy: cfg.Taxonomy})
	if err != nil {
		return s, err
	}
	s.Threshold = typed.Threshold
	figures := func(typed *learned.GateModel) (AuthorFigures, error) {
		m, err := rules.New(rules.Config{Taxonomy: cfg.Taxonomy, TypedModel: typed, Products: products})
		if err != nil {
			return AuthorFigures{}, err
		}
		r, err := Evaluate(ctx, EvalConfig{Module: m}, held)
		return AuthorFigures{CoreRecall: r.CoreRecall, MeanRecall: r.MeanRecall, Precision: r.Precision, CleanFalse: r.CleanFalseActivation, ExactType: r.ExactType}, err
	}
	if s.Rules, err = figures(nil); err != nil {
		return s, err
	}
	if s.Combined, err = figures(typed); err != nil {
		return s, err
	}
	gateRules, err := rules.New(rules.Config{Taxonomy: cfg.Taxonomy, Mode: rules.Recall, Products: products})
	if err != nil {
		return s, err
	}
	withModel, err := rules.New(rules.Config{Taxonomy: cfg.Taxonomy, Mode: rules.Recall, GateModel: gateModel, Products: products})
	if err != nil {
		return s, err
	}
	var gateScores, typedScores []float64
	var gold []bool
	var rulesPass, modelPass, typedPass []bool
	for _, e := range held {
		if _, ok := e.Input.LastUser(); !ok {
			return s, fmt.Errorf("%w: turn %s does not end with a user turn", inception.ErrInvalidInput, e.ID)
		}
		gateScores = append(gateScores, gateModel.Judge(withModel.GateFeaturizer().Features(e.Input), nil).Score)
		// 1 − P(clean) under the typed model: its gate score.
		ts := 1 - typed.Probabilities(gateRules.TypedFeaturizer().Features(e.Input))[0]
		typedScores = append(typedScores, ts)
		gold = append(gold, e.Class() != inception.CleanClass)
		r, err := gateRules.Detect(ctx, e.Input)
		if err != nil {
			return s, err
		}
		m, err := withModel.Detect(ctx, e.Input)
		if err != nil {
			return s, err
		}
		rulesPass = append(rulesPass, r.Rein)
		modelPass = append(modelPass, m.Rein)
		typedPass = append(typedPass, r.Rein || ts >= typed.GateThreshold)
	}
	s.GateRules, s.GateModel, s.GateTyped = rates(gold, rulesPass), rates(gold, modelPass), rates(gold, typedPass)
	s.AUCGate, s.AUCTyped = auc(gold, gateScores), auc(gold, typedScores)
	return s, nil
}

func rates(gold, passed []bool) AuthorGate {
	var ne, nc, pe, pc int
	for i, g := range gold {
		if g {
			ne++
			if passed[i] {
				pe++
			}
		} else {
			nc++
			if passed[i] {
				pc++
			}
		}
	}
	return AuthorGate{Erroneous: ratio(pe, ne), Clean: ratio(pc, nc)}
}

// auc is the share of (erroneous, clean) pairs the score orders right,
// ties counting half.
func auc(gold []bool, score []float64) float64 {
	var pairs, right float64
	for i := range gold {
		if !gold[i] {
			continue
		}
		for j := range gold {
			if gold[j] {
				continue
			}
			pairs++
			switch {
			case score[i] > score[j]:
				right++
			case score[i] == score[j]:
				right += 0.5
			}
		}
	}
	if pairs == 0 {
		return 0
	}
	return right / pairs
}
