package rules

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

func TestGateClassifierPassesWhatRulesHoldBack(t *testing.T) {
	tools := inceptiontest.MiniTools(t, "airline")
	in := func(text string) inception.Input {
		return inception.Input{Tenant: "t", Domain: "airline", Tools: tools, Dialogue: inceptiontest.Dialogue("Hi.", "Hello, how can I help?", text)}
	}
	const turn = "Good morning. Please frobnicate soon."
	rules, err := New(Config{Mode: Recall})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := rules.Detect(context.Background(), in(turn)); d.Rein {
		t.Fatalf("the gate's rules alone pass %q (%s), the test needs a turn they hold back", turn, d.ErrorType)
	}
	gate, err := New(Config{Mode: Recall, GateModel: inceptiontest.TinyGate()})
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
	gate, err := New(Config{Taxonomy: tax, Mode: Recall, GateModel: inceptiontest.TinyGate()})
	if err != nil {
		t.Fatal(err)
	}
	in := inception.Input{Tenant: "t", Domain: "airline", Tools: inceptiontest.MiniTools(t, "airline"), Dialogue: inceptiontest.Dialogue("Hi.", "How can I help?", "frobnicate zork please")}
	d, err := gate.Detect(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Rein || d.ErrorType != inception.TypeAnaphora {
		t.Errorf("with multiple_interpretation held out: %+v, want the next likeliest type, anaphora", d)
	}
}

// TestTypedModelKinds: a typed model is refused as the gate's classifier
// and the gate's as the typed one (their features differ).
func TestTypedModelKinds(t *testing.T) {
	if _, err := New(Config{Mode: Recall, GateModel: learned.DefaultTypedModel()}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("typed model as the gate's: %v", err)
	}
	if _, err := New(Config{TypedModel: learned.DefaultGateModel()}); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("gate model as the typed one: %v", err)
	}
	bad := *learned.DefaultTypedModel()
	bad.Features = "words"
	if err := bad.Validate(); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("features %q: %v", bad.Features, err)
	}
}

// A rules module's decisions name its classifier by content: the shipped
// model's version, another for other weights, none without a model (the
// cascade's skipped turns carry the gate's: inception/llmmodule).
func TestDecisionsNameTheModelVersion(t *testing.T) {
	ctx := context.Background()
	in := inception.Input{Dialogue: []inception.Utterance{{Role: inception.RoleUser, Text: "hello there"}}}
	typed := learned.DefaultTypedModel()
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
