package llmmodule

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/reinception/rein/inception"
)

// Gate results counted by the cascade (values of the stage's
// rein_detector_gate_total{result} label).
const (
	GatePass = "pass"
	GateSkip = "skip"
)

// Cascade runs a recall-oriented gate (normally the rules module in
// RulesRecall mode) on every turn and the model module only on the turns
// the gate lets through. A skipped turn is a clear decision of the gate.
type Cascade struct {
	gate, model inception.Module
	// counts are shared with the cascades WithGate derives, so the gate's
	// counters run on across a promoted model.
	counts *gateCounts
	// OnGate, when set, is called with GatePass or GateSkip after each
	// gate decision (the stage wires its metric here).
	OnGate func(result string)
	// Fallback, when set, judges a turn the gate passed when the model
	// cannot (down, its breaker open, past its deadline): normally the
	// rules module in its precise mode. Its decision is recorded as such
	// (model FallbackModel, the model's error in fail_reason); without it
	// the turn fails open.
	Fallback inception.Module
}

// gateCounts are a cascade's gate decisions since construction.
type gateCounts struct{ passed, skipped atomic.Uint64 }

// FallbackModel is the model field of a detection the cascade's fallback
// made because the inception model could not judge.
const FallbackModel = "rules-fallback"

// CascadeStats are the cascade's counters since construction.
type CascadeStats struct {
	Turns  uint64  `json:"turns"`
	Passed uint64  `json:"passed"` // sent to the model
	Share  float64 `json:"share"`  // Passed / Turns (0 when no turns)
}

// NewCascade builds a cascade from a gate and a model module.
func NewCascade(gate, model inception.Module) (*Cascade, error) {
	if gate == nil || model == nil {
		return nil, fmt.Errorf("%w: cascade needs a gate and a model module", inception.ErrInvalidConfig)
	}
	return &Cascade{gate: gate, model: model, counts: &gateCounts{}}, nil
}

// WithGate returns the cascade with another gate and fallback (a promoted
// model's) around the same model module, OnGate and counters.
func (c *Cascade) WithGate(gate, fallback inception.Module) (*Cascade, error) {
	if gate == nil {
		return nil, fmt.Errorf("%w: cascade needs a gate", inception.ErrInvalidConfig)
	}
	return &Cascade{gate: gate, model: c.model, counts: c.counts, OnGate: c.OnGate, Fallback: fallback}, nil
}

// Name implements Module.
func (c *Cascade) Name() string { return inception.ModuleCascade }

// Detect implements Module: the gate judges; a gate activation sends the
// turn to the model, whose decision is returned (errors included, so the
// stage fails open the same way as with the llm module alone).
func (c *Cascade) Detect(ctx context.Context, in inception.Input) (inception.Decision, error) {
	g, err := c.gate.Detect(ctx, in)
	if err != nil {
		return inception.Decision{}, fmt.Errorf("cascade gate: %w", err)
	}
	if !g.Rein {
		c.counts.skipped.Add(1)
		if c.OnGate != nil {
			c.OnGate(GateSkip)
		}
		return inception.Decision{TaxonomyVersion: g.TaxonomyVersion, ModelVersion: g.ModelVersion}, nil
	}
	c.counts.passed.Add(1)
	if c.OnGate != nil {
		c.OnGate(GatePass)
	}
	d, err := c.model.Detect(ctx, in)
	if err == nil && d.ModelVersion == "" {
		// The gate's model chose to ask the model: a promoted gate shows
		// in the detections of the turns it passed too.
		d.ModelVersion = g.ModelVersion
	}
	if err == nil || c.Fallback == nil {
		return d, err
	}
	// The model could not judge: the rules module's decision stands in,
	// recorded as such. Judged under a fresh deadline of its own (it takes
	// microseconds), since the model may have spent the turn's.
	fb, ferr := c.Fallback.Detect(context.WithoutCancel(ctx), in)
	if ferr != nil {
		return inception.Decision{}, fmt.Errorf("cascade: model: %w; fallback: %v", err, ferr)
	}
	fb.Model, fb.FailReason = FallbackModel, "inception model could not judge, the rules module decided: "+inception.FailReason(err)
	return fb, nil
}

// NeedsContext implements ContextFree. The model reads the whole dialogue,
// so the agent's replies can be left out only when the gate holds the turn
// back and would do so whatever they said: the gate must itself be
// ContextFree and not need them, and its verdict on the dialogue given must
// be clear. The gate then judges such a turn twice, which the cheap rules
// gate affords; its counters move only in Detect.
func (c *Cascade) NeedsContext(in inception.Input) bool {
	cf, ok := c.gate.(inception.ContextFree)
	if !ok || cf.NeedsContext(in) {
		return true
	}
	g, err := c.gate.Detect(context.Background(), in)
	return err != nil || g.Rein
}

// Gate returns the cascade's gate module, for measuring it alone
// (EvalConfig.Gate).
func (c *Cascade) Gate() inception.Module { return c.gate }

// Stats returns the share of turns sent to the model so far.
func (c *Cascade) Stats() CascadeStats {
	p, s := c.counts.passed.Load(), c.counts.skipped.Load()
	st := CascadeStats{Turns: p + s, Passed: p}
	if st.Turns > 0 {
		st.Share = float64(p) / float64(st.Turns)
	}
	return st
}
