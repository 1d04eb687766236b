package learned_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

func TestParseGateModelRejects(t *testing.T) {
	good, err := inceptiontest.TinyGate().Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := learned.ParseGateModel(good); err != nil {
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
		if _, err := learned.ParseGateModel([]byte(bad)); !errors.Is(err, inception.ErrInvalidConfig) {
			t.Errorf("%s: err %v, want ErrInvalidConfig", name, err)
		}
	}
	// A bad model in the config is refused at construction.
	g := inceptiontest.TinyGate()
	g.Bias = g.Bias[:1]
	if _, err := rules.New(rules.Config{Mode: rules.Recall, GateModel: g}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("New with a bad gate model: %v", err)
	}
}

func TestTrainGateRefuses(t *testing.T) {
	clean := inception.Example{ID: "a", Input: inception.Input{Domain: "airline", Dialogue: inceptiontest.Dialogue("hi")}}
	wrong := inception.Example{ID: "b", Input: inception.Input{Domain: "airline", Dialogue: inceptiontest.Dialogue("hi")}, Rein: true, ErrorType: "made_up"}
	agentLast := inception.Example{ID: "c", Input: inception.Input{Domain: "airline", Dialogue: []inception.Utterance{{Role: inception.RoleAgent, Text: "hi"}}}}
	for name, ex := range map[string][]inception.Example{
		"only clean":   {clean},
		"unknown type": {clean, wrong},
		"agent last":   {agentLast},
		"no examples":  nil,
	} {
		if _, err := learned.TrainGate(ex, gateFeaturizer(t), learned.GateTrainConfig{}); err == nil {
			t.Errorf("%s: trained", name)
		}
	}
	if _, err := learned.TrainGate([]inception.Example{clean}, gateFeaturizer(t), learned.GateTrainConfig{TargetRecall: 1.5}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("target recall 1.5: %v", err)
	}
}
