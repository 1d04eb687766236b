package offline

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/reinception/rein/inception"
)

// CoreTypes are the four error types the method is built around (the ones
// the paper never holds out); EvalReport.CoreRecall pools their turns.
var CoreTypes = []string{inception.TypeAnaphora, inception.TypeMultipleInterpretation, inception.TypeUnsupportedAction, inception.TypeUnsupportedParameter}

// EvalConfig configures Evaluate.
type EvalConfig struct {
	// Module judges every example (required).
	Module inception.Module
	// Gate, when set, is run on every example too and its activation
	// counted as a pass: the cascade's recall gate (for --module cascade it
	// is the cascade's own gate; to measure the gate alone it is the
	// Module as well).
	Gate inception.Module
	// Types lists the error types reported, in order (default: the six
	// default types). A type the module answers outside this list is
	// still counted in the confusion matrix.
	Types []string
	// Timeout bounds one Detect call (default 30 s).
	Timeout time.Duration
}

// Validate reports an unusable config.
func (c *EvalConfig) Validate() error {
	if c.Module == nil {
		return fmt.Errorf("%w: evaluation needs a module", inception.ErrInvalidConfig)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: evaluation timeout %s is negative", inception.ErrInvalidConfig, c.Timeout)
	}
	return nil
}

func (c *EvalConfig) defaults() {
	if len(c.Types) == 0 {
		c.Types = []string{inception.TypeAnaphora, inception.TypeMultipleInterpretation, inception.TypeContradiction, inception.TypeUnsupportedAction, inception.TypeUnsupportedParameter, inception.TypeUnsupportedDomain}
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
}

// TypeScore is one error type's figures: support is the number of gold
// turns of the type, predicted the number of turns the module gave it.
type TypeScore struct {
	Type      string  `json:"type"`
	Support   int     `json:"support"`
	Predicted int     `json:"predicted"`
	Correct   int     `json:"correct"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
}

// GateScore is the cascade gate's pass rates: the share of erroneous turns
// it sends to the model (its recall; a turn it holds back is lost) and of
// clean ones (its cost). ModelCallsSaved is the share of all turns the
// model never sees.
type GateScore struct {
	PassedErroneous int     `json:"passed_erroneous"`
	PassedClean     int     `json:"passed_clean"`
	ErroneousRate   float64 `json:"erroneous_pass_rate"`
	CleanRate       float64 `json:"clean_pass_rate"`
	ModelCallsSaved float64 `json:"model_calls_saved"`
	// MissedByType counts the erroneous turns the gate held back.
	MissedByType map[string]int `json:"missed_by_type,omitempty"`
}

// Latency summarises Detect's wall time per turn, in milliseconds.
type Latency struct {
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// EvalReport is what Evaluate measures on a labelled set.
type EvalReport struct {
	Module    string `json:"module"`
	Turns     int    `json:"turns"`
	Erroneous int    `json:"erroneous"`
	Clean     int    `json:"clean"`
	Failed    int    `json:"failed"` // Detect errors and failed decisions (no activation)

	Types []TypeScore `json:"types"`
	// Detected is the share of erroneous turns activated on, whatever the
	// type; ExactType the share of those activations with the gold type.
	Detected  float64 `json:"detected"`
	ExactType float64 `json:"exact_type"`
	// Precision is the share of activations on erroneous turns.
	Precision float64 `json:"precision"`
	// CleanFalseActivation is the share of clean turns activated on.
	CleanFalseActivation float64 `json:"clean_false_activation"`
	// CoreRecall pools the turns of CoreTypes; MeanRecall averages the
	// per-type recall over the reported types the set holds turns of.
	CoreRecall float64 `json:"core_recall"`
	MeanRecall float64 `json:"mean_recall"`
	MacroF1    float64 `json:"macro_f1"`
	// Confusion counts gold class → predicted class (CleanClass for no
	// activation).
	Confusion map[string]map[string]int `json:"confusion"`
	Gate      *GateScore                `json:"gate,omitempty"`
	Latency   Latency                   `json:"latency"`
	// Mistakes lists the turns judged wrong, in input order.
	Mistakes []Mistake `json:"-"`
}

// Mistake is one turn whose predicted class differs from the gold one.
type Mistake struct {
	ID       string
	Gold     string
	Got      string
	Evidence string
}

// Evaluate runs the module (and the gate, when set) on every example, in
// order, and scores the decisions against the labels. A Detect error counts
// as no activation (the stage fails open) and as Failed; it does not stop
// the run unless ctx ends.
func Evaluate(ctx context.Context, cfg EvalConfig, examples []inception.Example) (EvalReport, error) {
	if err := cfg.Validate(); err != nil {
		return EvalReport{}, err
	}
	cfg.defaults()
	rep := EvalReport{Module: cfg.Module.Name(), Confusion: map[string]map[string]int{}}
	if cfg.Gate != nil {
		rep.Gate = &GateScore{MissedByType: map[string]int{}}
	}
	latencies := make([]time.Duration, 0, len(examples))
	for _, ex := range examples {
		if err := ctx.Err(); err != nil {
			return EvalReport{}, fmt.Errorf("evaluation stopped after %d turns: %w", rep.Turns, err)
		}
		gold := ex.Class()
		rep.Turns++
		if gold == inception.CleanClass {
			rep.Clean++
		} else {
			rep.Erroneous++
		}
		callCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		start := time.Now()
		d, err := cfg.Module.Detect(callCtx, ex.Input)
		latencies = append(latencies, time.Since(start))
		cancel()
		got := inception.CleanClass
		switch {
		case err != nil || d.Failed:
			rep.Failed++
		case d.Rein:
			got = d.ErrorType
		}
		if rep.Confusion[gold] == nil {
			rep.Confusion[gold] = map[string]int{}
		}
		rep.Confusion[gold][got]++
		if got != gold {
			rep.Mistakes = append(rep.Mistakes, Mistake{ID: ex.ID, Gold: gold, Got: got, Evidence: d.Evidence})
		}
		if cfg.Gate != nil {
			if err := rep.Gate.add(ctx, cfg.Gate, ex, gold); err != nil {
				return EvalReport{}, err
			}
		}
	}
	rep.score(cfg.Types)
	rep.Latency = summarise(latencies)
	return rep, nil
}

func (g *GateScore) add(ctx context.Context, gate inception.Module, ex inception.Example, gold string) error {
	d, err := gate.Detect(ctx, ex.Input)
	if err != nil {
		return fmt.Errorf("gate on %s: %w", ex.ID, err)
	}
	switch {
	case d.Rein && gold == inception.CleanClass:
		g.PassedClean++
	case d.Rein:
		g.PassedErroneous++
	case gold != inception.CleanClass:
		g.MissedByType[gold]++
	}
	return nil
}

// ratio is n/d, or 0 when d is 0.
func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

func (r *EvalReport) score(types []string) {
	activated, onErroneous, exact := 0, 0, 0
	for gold, row := range r.Confusion {
		for got, n := range row {
			if got == inception.CleanClass {
				continue
			}
			activated += n
			if gold != inception.CleanClass {
				onErroneous += n
				if got == gold {
					exact += n
				}
			}
		}
	}
	r.Detected = ratio(onErroneous, r.Erroneous)
	r.ExactType = ratio(exact, onErroneous)
	r.Precision = ratio(onErroneous, activated)
	r.CleanFalseActivation = ratio(activated-onErroneous, r.Clean)
	coreSupport, coreCorrect, present := 0, 0, 0
	var sumRecall, sumF1 float64
	for _, t := range types {
		s := TypeScore{Type: t, Support: sumRow(r.Confusion[t]), Correct: r.Confusion[t][t]}
		for _, row := range r.Confusion {
			s.Predicted += row[t]
		}
		s.Precision, s.Recall = ratio(s.Correct, s.Predicted), ratio(s.Correct, s.Support)
		if s.Precision+s.Recall > 0 {
			s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
		}
		r.Types = append(r.Types, s)
		if s.Support > 0 {
			present++
			sumRecall += s.Recall
		}
		sumF1 += s.F1
		if slices.Contains(CoreTypes, t) {
			coreSupport += s.Support
			coreCorrect += s.Correct
		}
	}
	if present > 0 {
		r.MeanRecall = sumRecall / float64(present)
	}
	if len(types) > 0 {
		r.MacroF1 = sumF1 / float64(len(types))
	}
	r.CoreRecall = ratio(coreCorrect, coreSupport)
	if g := r.Gate; g != nil {
		g.ErroneousRate = ratio(g.PassedErroneous, r.Erroneous)
		g.CleanRate = ratio(g.PassedClean, r.Clean)
		g.ModelCallsSaved = 1 - ratio(g.PassedErroneous+g.PassedClean, r.Turns)
		if r.Turns == 0 {
			g.ModelCallsSaved = 0
		}
	}
}

func sumRow(row map[string]int) int {
	n := 0
	for _, v := range row {
		n += v
	}
	return n
}

func summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	ms := func(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }
	at := func(q float64) time.Duration { return ds[int(math.Ceil(q*float64(len(ds))))-1] }
	return Latency{MeanMS: ms(sum / time.Duration(len(ds))), P50MS: ms(at(0.5)), P95MS: ms(at(0.95)), MaxMS: ms(ds[len(ds)-1])}
}
