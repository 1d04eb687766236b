package rules

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/llm"
)

// corpusExamples loads dev splits of the labelled corpus as examples with
// each domain's built-in tool catalogue, as rein detect --eval does. It
// refuses the test split.
func corpusExamples(t testing.TB, splits ...string) []inception.Example {
	t.Helper()
	tools := map[string][]llm.Tool{}
	var out []inception.Example
	for _, split := range splits {
		if split == "test" {
			t.Fatal("the test split is never trained or tuned on")
		}
		ds, err := loadCorpusSplit(filepath.Join(corpusDir, split+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if tools[d.Domain] == nil {
				if tools[d.Domain], err = taubench.ToolCatalogue(d.Domain); err != nil {
					t.Fatal(err)
				}
			}
			in := inception.Input{Tenant: "corpus", Domain: d.Domain, Tools: tools[d.Domain]}
			for _, m := range d.Messages {
				role := inception.RoleUser
				if m.Role == "assistant" {
					role = inception.RoleAgent
				}
				in.Dialogue = append(in.Dialogue, inception.Utterance{Role: role, Text: m.Content})
			}
			out = append(out, inception.Example{ID: d.ID, Input: in, Rein: *d.Label.Rein, ErrorType: *d.Label.ErrorType, Author: inception.CorpusAuthor(split)})
		}
	}
	return out
}

// gatePasses returns, per example, whether the gate sends it to the model.
func gatePasses(t testing.TB, gate *Module, examples []inception.Example) []bool {
	t.Helper()
	out := make([]bool, len(examples))
	for i, e := range examples {
		d, err := gate.Detect(context.Background(), e.Input)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = d.Rein
	}
	return out
}

// passRates returns the shares of erroneous and clean examples passed.
func passRates(examples []inception.Example, passed []bool) (erroneous, clean float64) {
	gold := make([]bool, len(examples))
	for i, e := range examples {
		gold[i] = e.Rein
	}
	r := rates(gold, passed)
	return r.Erroneous, r.Clean
}

func splitNames(s string) []string { return strings.Split(s, ",") }

// TestTrainGateReproducible: the same turns and config give the same model
// file, byte for byte, whatever order the turns come in.
func TestTrainGateReproducible(t *testing.T) {
	checkReproducible(t, corpusExamples(t, "dev2"), func(ex []inception.Example) (*GateModel, error) {
		return TrainGate(ex, GateTrainConfig{})
	})
}

// checkReproducible trains twice, on examples and on them reversed, and
// fails unless both give the same model file, byte for byte, and the file
// survives a parse and an encode. It returns the first model.
func checkReproducible(t *testing.T, examples []inception.Example, train func([]inception.Example) (*GateModel, error)) *GateModel {
	t.Helper()
	a, err := train(examples)
	if err != nil {
		t.Fatal(err)
	}
	reversed := slices.Clone(examples)
	slices.Reverse(reversed)
	b, err := train(reversed)
	if err != nil {
		t.Fatal(err)
	}
	ea, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := b.Encode()
	if !bytes.Equal(ea, eb) {
		t.Error("two trainings on the same turns gave different models")
	}
	back, err := ParseGateModel(ea)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := back.Encode(); !bytes.Equal(ea, again) {
		t.Error("a model file does not survive a parse and an encode")
	}
	return a
}

// TestGateModelFileIsCurrent: the shipped gate_model.json is what training
// on the splits it names gives (go generate ./inception rebuilds it).
func TestGateModelFileIsCurrent(t *testing.T) {
	shipped := DefaultGateModel()
	var splits []string
	for _, s := range shipped.Training.Sources {
		splits = append(splits, strings.TrimSuffix(s, ".jsonl"))
	}
	a, err := TrainGate(corpusExamples(t, splits...), GateTrainConfig{Sources: shipped.Training.Sources})
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, "gate_model.json", a, shipped)
}

// sameModel fails unless the retrained model a equals the shipped one up
// to the last rounded digit (a platform that fuses multiply-adds may
// differ there).
func sameModel(t *testing.T, file string, a, shipped *GateModel) {
	t.Helper()
	if math.Abs(a.Threshold-shipped.Threshold) > 1e-5 || len(a.Weights) != len(shipped.Weights) {
		t.Fatalf("%s is stale: retrained threshold %v, %d features; shipped %v, %d (run go generate ./inception)",
			file, a.Threshold, len(a.Weights), shipped.Threshold, len(shipped.Weights))
	}
	for name, w := range a.Weights {
		s, ok := shipped.Weights[name]
		if !ok {
			t.Fatalf("%s lacks feature %q (run go generate ./inception)", file, name)
		}
		for c := range w {
			if math.Abs(w[c]-s[c]) > 1e-5 {
				t.Fatalf("%s feature %q: retrained %v, shipped %v (run go generate ./inception)", file, name, w, s)
			}
		}
	}
}

// TestGateHeldOutAuthor is the gate's leave-one-author-out yardstick: the
// corpus's dev side has three authors (dev and dev2, dev3, dev4); trained
// on two of them (threshold chosen by cross-validation there for 97 %
// recall), the classifier is scored on the third. The floors are a little
// below what was measured when the classifier was built (logged by the
// test with the gate's rules alone and with both; the rules were tuned by
// hand on dev, dev2 and dev3, so only dev4's rules figure is out of
// author; see testdata/corpus/README.md).
func TestGateHeldOutAuthor(t *testing.T) {
	for _, c := range []struct {
		train, held         string
		erroneous, cleanMax float64
	}{
		{"dev3,dev4", "dev,dev2", 0.97, 0.98}, // measured 99.5 % / 96.1 %
		{"dev,dev2,dev4", "dev3", 0.97, 0.85}, // 100 % / 80.4 %
		{"dev,dev2,dev3", "dev4", 0.95, 0.80}, // 97.1 % / 76.8 %
	} {
		train, held := corpusExamples(t, splitNames(c.train)...), corpusExamples(t, splitNames(c.held)...)
		g, err := TrainGate(train, GateTrainConfig{})
		if err != nil {
			t.Fatal(err)
		}
		classifier, err := New(Config{Mode: Recall, GateModel: g})
		if err != nil {
			t.Fatal(err)
		}
		rules, err := New(Config{Mode: Recall})
		if err != nil {
			t.Fatal(err)
		}
		alone := make([]bool, len(held))
		for i, e := range held {
			text, _ := e.Input.LastUser()
			lower := strings.ToLower(text)
			alone[i] = g.judge(classifier.gateFeatures(classifier.domains[e.Input.Domain], e.Input, lower), nil).score >= g.Threshold
		}
		ce, cc := passRates(held, alone)
		oe, oc := passRates(held, gatePasses(t, classifier, held))
		re, rc := passRates(held, gatePasses(t, rules, held))
		t.Logf("train %s → %s: classifier alone %.1f%% erroneous / %.1f%% clean; rules gate %.1f%% / %.1f%%; rules or classifier %.1f%% / %.1f%% (threshold %.4f, cross-validated %.1f%% / %.1f%%)",
			c.train, c.held, 100*ce, 100*cc, 100*re, 100*rc, 100*oe, 100*oc, g.Threshold, 100*g.Training.CVErroneous, 100*g.Training.CVClean)
		if ce < c.erroneous || cc > c.cleanMax {
			t.Errorf("train %s → %s: classifier passes %.3f of erroneous and %.3f of clean turns, want at least %.2f and at most %.2f",
				c.train, c.held, ce, cc, c.erroneous, c.cleanMax)
		}
		if oe < max(ce, re) {
			t.Errorf("rules or classifier passes %.3f of erroneous turns, less than either alone", oe)
		}
	}
}
