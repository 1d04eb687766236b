package offline

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// scripted answers each turn by its last words: a fixed module for scoring.
type scripted struct {
	name    string
	answers map[string]string // last user text → error type ("" = clear, "!" = error)
}

func (s scripted) Name() string { return s.name }

func (s scripted) Detect(_ context.Context, in inception.Input) (inception.Decision, error) {
	text, _ := in.LastUser()
	switch a := s.answers[text]; a {
	case "":
		return inception.Decision{}, nil
	case "!":
		return inception.Decision{}, errors.New("model down")
	default:
		return inception.Decision{Rein: true, ErrorType: a}, nil
	}
}

func TestEvaluateScores(t *testing.T) {
	ex := func(id, text, typ string) inception.Example {
		return inception.Example{ID: id, Input: inception.Input{Dialogue: inceptiontest.Dialogue(text)}, Rein: typ != "", ErrorType: typ}
	}
	examples := []inception.Example{
		ex("a1", "a1", inception.TypeAnaphora),
		ex("a2", "a2", inception.TypeAnaphora),
		ex("m1", "m1", inception.TypeMultipleInterpretation),
		ex("d1", "d1", inception.TypeUnsupportedDomain),
		ex("c1", "c1", ""),
		ex("c2", "c2", ""),
		ex("c3", "c3", ""),
	}
	module := scripted{name: "m", answers: map[string]string{
		"a1": inception.TypeAnaphora, "a2": inception.TypeMultipleInterpretation, "m1": "!", "d1": inception.TypeUnsupportedDomain, "c1": inception.TypeAnaphora,
	}}
	gate := scripted{name: "g", answers: map[string]string{"a1": "x", "a2": "x", "d1": "x", "c1": "x"}}
	rep, err := Evaluate(context.Background(), EvalConfig{Module: module, Gate: gate}, examples)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Turns != 7 || rep.Erroneous != 4 || rep.Clean != 3 || rep.Failed != 1 || len(rep.Mistakes) != 3 {
		t.Fatalf("report %+v", rep)
	}
	byType := map[string]TypeScore{}
	for _, s := range rep.Types {
		byType[s.Type] = s
	}
	if s := byType[inception.TypeAnaphora]; s.Support != 2 || s.Predicted != 2 || s.Correct != 1 || s.Precision != 0.5 || s.Recall != 0.5 || s.F1 != 0.5 {
		t.Errorf("anaphora %+v", s)
	}
	if s := byType[inception.TypeMultipleInterpretation]; s.Support != 1 || s.Predicted != 1 || s.Correct != 0 || s.F1 != 0 {
		t.Errorf("multiple_interpretation %+v", s)
	}
	// Activations: a1, a2 (wrong type), d1 on erroneous turns, c1 on a
	// clean one; m1 failed and counts as no activation.
	if rep.Detected != 0.75 || rep.ExactType != 2.0/3 || rep.Precision != 0.75 || rep.CleanFalseActivation != 1.0/3 {
		t.Errorf("detected %v exact %v precision %v clean %v", rep.Detected, rep.ExactType, rep.Precision, rep.CleanFalseActivation)
	}
	// Core types: anaphora 1 of 2, multiple interpretation 0 of 1; mean
	// recall over the three types present: (0.5 + 0 + 1) / 3.
	if rep.CoreRecall != 1.0/3 || rep.MeanRecall != 0.5 {
		t.Errorf("core %v mean %v", rep.CoreRecall, rep.MeanRecall)
	}
	if rep.Confusion[inception.TypeAnaphora][inception.TypeMultipleInterpretation] != 1 || rep.Confusion[inception.TypeMultipleInterpretation][inception.CleanClass] != 1 {
		t.Errorf("confusion %v", rep.Confusion)
	}
	g := rep.Gate
	if g == nil || g.PassedErroneous != 3 || g.PassedClean != 1 || g.ErroneousRate != 0.75 || g.CleanRate != 1.0/3 || math.Abs(g.ModelCallsSaved-3.0/7) > 1e-12 || g.MissedByType[inception.TypeMultipleInterpretation] != 1 {
		t.Errorf("gate %+v", g)
	}
	if rep.Latency.MaxMS < rep.Latency.P50MS || rep.Latency.MeanMS < 0 {
		t.Errorf("latency %+v", rep.Latency)
	}
}

func TestEvaluateConfigAndCancel(t *testing.T) {
	if _, err := Evaluate(context.Background(), EvalConfig{}, nil); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("no module: %v", err)
	}
	if _, err := Evaluate(context.Background(), EvalConfig{Module: scripted{}, Timeout: -1}, nil); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("negative timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Evaluate(ctx, EvalConfig{Module: scripted{}}, []inception.Example{{ID: "x", Input: inception.Input{Dialogue: inceptiontest.Dialogue("x")}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	rep, err := Evaluate(context.Background(), EvalConfig{Module: scripted{name: "m"}}, nil)
	if err != nil || rep.Turns != 0 || rep.Precision != 0 || rep.Gate != nil {
		t.Errorf("empty set: %+v %v", rep, err)
	}
}
