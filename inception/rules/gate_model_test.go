package rules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
)

// tinyGate is a hand-made gate model: "frobnicate" points at
// multiple_interpretation, "zork" at anaphora, everything else is clean.
func tinyGate() *GateModel {
	return &GateModel{
		Format:    GateModelFormat,
		Classes:   []string{inception.CleanClass, inception.TypeAnaphora, inception.TypeMultipleInterpretation},
		Threshold: 0.5,
		Bias:      []float64{2, 0, 0},
		Weights: map[string][]float64{
			"w:frobnicate": {0, 0, 5},
			"w:zork":       {0, 4, 0},
		},
	}
}

func TestGateClassifierPassesWhatRulesHoldBack(t *testing.T) {
	tools := miniTools(t, "airline")
	in := func(text string) inception.Input {
		return inception.Input{Tenant: "t", Domain: "airline", Tools: tools, Dialogue: dialogue("Hi.", "Hello, how can I help?", text)}
	}
	const turn = "Good morning. Please frobnicate soon."
	rules, err := New(Config{Mode: Recall})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := rules.Detect(context.Background(), in(turn)); d.Rein {
		t.Fatalf("the gate's rules alone pass %q (%s), the test needs a turn they hold back", turn, d.ErrorType)
	}
	gate, err := New(Config{Mode: Recall, GateModel: tinyGate()})
	if err != nil {
		t.Fatal(err)
	}
	d, err := gate.Detect(context.Background(), in(turn))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Rein || d.ErrorType != inception.TypeMultipleInterpretation {
		t.Fatalf("gate with classifier: %+v, want a multiple_interpretation pass", d)
	}
	// The evidence is the sentence holding the feature that weighed most.
	if !strings.Contains(d.Evidence, "frobnicate") {
		t.Errorf("evidence %q, want the sentence holding 'frobnicate'", d.Evidence)
	}
	if strings.Contains(d.Evidence, "Good morning") {
		t.Errorf("evidence %q quotes the wrong sentence", d.Evidence)
	}
	// Below the threshold the turn is held back.
	if d, _ := gate.Detect(context.Background(), in("Good morning. Please look around soon.")); d.Rein {
		t.Errorf("a turn without the feature passed: %+v", d)
	}
	// The gate with a classifier still never needs the agent's replies.
	if gate.NeedsContext(in(turn)) {
		t.Error("the gate with a classifier needs context")
	}
}

func TestGateClassifierSkipsHeldOutTypes(t *testing.T) {
	tax, err := inception.DefaultTaxonomy().WithHeldOut(inception.TypeMultipleInterpretation)
	if err != nil {
		t.Fatal(err)
	}
	gate, err := New(Config{Taxonomy: tax, Mode: Recall, GateModel: tinyGate()})
	if err != nil {
		t.Fatal(err)
	}
	in := inception.Input{Tenant: "t", Domain: "airline", Tools: miniTools(t, "airline"), Dialogue: dialogue("Hi.", "How can I help?", "frobnicate zork please")}
	d, err := gate.Detect(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Rein || d.ErrorType != inception.TypeAnaphora {
		t.Errorf("with multiple_interpretation held out: %+v, want the next likeliest type, anaphora", d)
	}
}

func TestParseGateModelRejects(t *testing.T) {
	good, err := tinyGate().Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseGateModel(good); err != nil {
		t.Fatalf("a valid model: %v", err)
	}
	for name, mutate := range map[string]func(string) string{
		"format":        func(s string) string { return strings.Replace(s, `"format": 1`, `"format": 9`, 1) },
		"clean first":   func(s string) string { return strings.Replace(s, `"clean",`, `"cleanish",`, 1) },
		"threshold":     func(s string) string { return strings.Replace(s, `"threshold": 0.5`, `"threshold": 0`, 1) },
		"weight count":  func(s string) string { return strings.Replace(s, `[0,4,0]`, `[0,4]`, 1) },
		"unknown field": func(s string) string { return strings.Replace(s, `"format": 1`, `"format": 1, "thresold": 2`, 1) },
		"not json":      func(s string) string { return s[:len(s)/2] },
	} {
		bad := mutate(string(good))
		if bad == string(good) {
			t.Fatalf("%s: mutation did not apply", name)
		}
		if _, err := ParseGateModel([]byte(bad)); !errors.Is(err, inception.ErrInvalidConfig) {
			t.Errorf("%s: err %v, want ErrInvalidConfig", name, err)
		}
	}
	// A bad model in the config is refused at construction.
	g := tinyGate()
	g.Bias = g.Bias[:1]
	if _, err := New(Config{Mode: Recall, GateModel: g}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("New with a bad gate model: %v", err)
	}
}

func TestTrainGateRefuses(t *testing.T) {
	clean := inception.Example{ID: "a", Input: inception.Input{Domain: "airline", Dialogue: dialogue("hi")}}
	wrong := inception.Example{ID: "b", Input: inception.Input{Domain: "airline", Dialogue: dialogue("hi")}, Rein: true, ErrorType: "made_up"}
	agentLast := inception.Example{ID: "c", Input: inception.Input{Domain: "airline", Dialogue: []inception.Utterance{{Role: inception.RoleAgent, Text: "hi"}}}}
	for name, ex := range map[string][]inception.Example{
		"only clean":   {clean},
		"unknown type": {clean, wrong},
		"agent last":   {agentLast},
		"no examples":  nil,
	} {
		if _, err := TrainGate(ex, GateTrainConfig{}); err == nil {
			t.Errorf("%s: trained", name)
		}
	}
	if _, err := TrainGate([]inception.Example{clean}, GateTrainConfig{TargetRecall: 1.5}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("target recall 1.5: %v", err)
	}
}
