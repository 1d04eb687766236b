package learned_test

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// TestTrainGateReproducible: the same turns and config give the same model
// file, byte for byte, whatever order the turns come in.
func TestTrainGateReproducible(t *testing.T) {
	checkReproducible(t, inceptiontest.Corpus(t, "dev2"), func(ex []inception.Example) (*learned.GateModel, error) {
		return learned.TrainGate(ex, gateFeaturizer(t), learned.GateTrainConfig{})
	})
}

// checkReproducible trains twice, on examples and on them reversed, and
// fails unless both give the same model file, byte for byte, and the file
// survives a parse and an encode. It returns the first model.
func checkReproducible(t *testing.T, examples []inception.Example, train func([]inception.Example) (*learned.GateModel, error)) *learned.GateModel {
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
	back, err := learned.ParseGateModel(ea)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := back.Encode(); !bytes.Equal(ea, again) {
		t.Error("a model file does not survive a parse and an encode")
	}
	return a
}

// TestGateModelFileIsCurrent: the shipped gate_model.json is what training
// on the splits it names gives (go generate ./inception/learned rebuilds it).
func TestGateModelFileIsCurrent(t *testing.T) {
	shipped := learned.DefaultGateModel()
	var splits []string
	for _, s := range shipped.Training.Sources {
		splits = append(splits, strings.TrimSuffix(s, ".jsonl"))
	}
	a, err := learned.TrainGate(inceptiontest.Corpus(t, splits...), gateFeaturizer(t), learned.GateTrainConfig{Sources: shipped.Training.Sources})
	if err != nil {
		t.Fatal(err)
	}
	sameModel(t, "gate_model.json", a, shipped)
}

// sameModel fails unless the retrained model a equals the shipped one up
// to the last rounded digit (a platform that fuses multiply-adds may
// differ there).
func sameModel(t *testing.T, file string, a, shipped *learned.GateModel) {
	t.Helper()
	if math.Abs(a.Threshold-shipped.Threshold) > 1e-5 || len(a.Weights) != len(shipped.Weights) {
		t.Fatalf("%s is stale: retrained threshold %v, %d features; shipped %v, %d (run go generate ./inception/learned)",
			file, a.Threshold, len(a.Weights), shipped.Threshold, len(shipped.Weights))
	}
	for name, w := range a.Weights {
		s, ok := shipped.Weights[name]
		if !ok {
			t.Fatalf("%s lacks feature %q (run go generate ./inception/learned)", file, name)
		}
		for c := range w {
			if math.Abs(w[c]-s[c]) > 1e-5 {
				t.Fatalf("%s feature %q: retrained %v, shipped %v (run go generate ./inception/learned)", file, name, w, s)
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
// author; see testdata/corpus/README.md). The default run holds out dev4
// only, the author neither the classifier nor the rules were tuned on;
// REIN_LONG=1 holds out each of the three.
func TestGateHeldOutAuthor(t *testing.T) {
	cases := []struct {
		train, held         string
		erroneous, cleanMax float64
	}{
		{"dev,dev2,dev3", "dev4", 0.95, 0.80}, // 97.1 % / 76.8 %
		{"dev3,dev4", "dev,dev2", 0.97, 0.98}, // measured 99.5 % / 96.1 %
		{"dev,dev2,dev4", "dev3", 0.97, 0.85}, // 100 % / 80.4 %
	}
	if !testutil.Long() {
		cases = cases[:1]
	}
	for _, c := range cases {
		train, held := inceptiontest.Corpus(t, splitNames(c.train)...), inceptiontest.Corpus(t, splitNames(c.held)...)
		g, err := learned.TrainGate(train, gateFeaturizer(t), learned.GateTrainConfig{})
		if err != nil {
			t.Fatal(err)
		}
		classifier, err := rules.New(rules.Config{Mode: rules.Recall, GateModel: g})
		if err != nil {
			t.Fatal(err)
		}
		rules, err := rules.New(rules.Config{Mode: rules.Recall})
		if err != nil {
			t.Fatal(err)
		}
		alone := make([]bool, len(held))
		for i, e := range held {
			alone[i] = g.Judge(classifier.GateFeaturizer().Features(e.Input), nil).Score >= g.Threshold
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

// gatePasses returns, per example, whether the gate sends it to the model.
func gatePasses(t testing.TB, gate *rules.Module, examples []inception.Example) []bool {
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
	var ne, nc, pe, pc float64
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
	return pe / max(ne, 1), pc / max(nc, 1)
}

func splitNames(s string) []string { return strings.Split(s, ",") }

// gateFeaturizer is what rein detect --train-gate trains on: the gate's
// features.
func gateFeaturizer(t testing.TB) learned.Featurizer {
	t.Helper()
	m, err := rules.New(rules.Config{Mode: rules.Recall})
	if err != nil {
		t.Fatal(err)
	}
	return m.GateFeaturizer()
}

// typedFeaturizer is what rein detect --train-typed trains on: the
// precise rules' signals, reading products when not nil.
func typedFeaturizer(t testing.TB, products *rules.ProductCatalogue) learned.TypedFeaturizer {
	t.Helper()
	m, err := rules.New(rules.Config{Products: products})
	if err != nil {
		t.Fatal(err)
	}
	return m.TypedFeaturizer()
}
