package llmmodule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

func TestCascadeSendsOnlyGatedTurns(t *testing.T) {
	gate, err := rules.New(rules.Config{Mode: rules.Recall})
	if err != nil {
		t.Fatal(err)
	}
	client := inceptiontest.Answering(`{"rein":true,"error_type":"anaphora","evidence":"cancel that one","reasoning":"r"}`)
	model, _ := NewLLM(LLMConfig{Client: client})
	c, err := NewCascade(gate, model)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	gateCounts := map[string]int{}
	c.OnGate = func(r string) { mu.Lock(); gateCounts[r]++; mu.Unlock() }
	tools := inceptiontest.MiniTools(t, "airline")
	turns := []struct {
		text string
		want bool
	}{
		{"Hi, I want to book a flight from Boston to Denver on May 20.", false},
		{"My user id is sara_doe_496.", false},
		{"Please cancel that one.", true},
		{"Economy, one passenger, no insurance.", false},
	}
	for _, tc := range turns {
		d, err := c.Detect(context.Background(), inception.Input{Domain: "airline", Tools: tools, Dialogue: inceptiontest.Dialogue(tc.text)})
		if err != nil {
			t.Fatal(err)
		}
		if d.Rein != tc.want || d.TaxonomyVersion == "" {
			t.Errorf("%q: %+v", tc.text, d)
		}
	}
	if n := len(client.Requests()); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	st := c.Stats()
	if st.Turns != 4 || st.Passed != 1 || st.Share != 0.25 || gateCounts[GatePass] != 1 || gateCounts[GateSkip] != 3 {
		t.Errorf("stats %+v, gate %v", st, gateCounts)
	}
}

func TestCascadeModelErrorPropagates(t *testing.T) {
	gate, _ := rules.New(rules.Config{Mode: rules.Recall})
	model, _ := NewLLM(LLMConfig{Client: &inceptiontest.FakeClient{Reply: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, errors.New("503")
	}}})
	c, _ := NewCascade(gate, model)
	if _, err := c.Detect(context.Background(), inception.Input{Domain: "airline", Dialogue: inceptiontest.Dialogue("Cancel that one.")}); !errors.Is(err, inception.ErrModel) {
		t.Fatalf("err = %v, want ErrModel", err)
	}
	if _, err := NewCascade(nil, model); !errors.Is(err, inception.ErrInvalidConfig) {
		t.Errorf("nil gate: %v", err)
	}
}

// The inception model down (here: its breaker open): a turn the gate
// passed is judged by the rules module instead, recorded as such, rather
// than failing open and losing the rules' own detection.
func TestCascadeFallsBackToTheRulesWhenTheModelIsDown(t *testing.T) {
	gate, _ := rules.New(rules.Config{Mode: rules.Recall})
	fallback, _ := rules.New(rules.Config{})
	down := &inceptiontest.FakeClient{Reply: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, fmt.Errorf("inception: %w", llm.ErrUnavailable)
	}}
	model, _ := NewLLM(LLMConfig{Client: down})
	c, err := NewCascade(gate, model)
	if err != nil {
		t.Fatal(err)
	}
	tools := inceptiontest.MiniTools(t, "airline")
	in := inception.Input{Domain: "airline", Tools: tools, Dialogue: inceptiontest.Dialogue("Can you book me a hotel in Denver too?")}
	if _, err := c.Detect(context.Background(), in); err == nil {
		t.Fatal("without a fallback the model's failure should reach the stage (fail open)")
	}
	c.Fallback = fallback
	d, err := c.Detect(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fallback.Detect(context.Background(), in)
	if d.Rein != want.Rein || d.ErrorType != want.ErrorType || !d.Rein {
		t.Fatalf("fallback decision %+v, want the rules module's %+v (an activation)", d, want)
	}
	if d.Model != FallbackModel || !strings.Contains(d.FailReason, "unavailable") || d.Failed {
		t.Fatalf("decision %+v not recorded as the rules fallback", d)
	}
}

// The cascade's skipped turns carry the gate's model version.
func TestCascadeSkipNamesTheGateModelVersion(t *testing.T) {
	ctx := context.Background()
	in := inception.Input{Dialogue: []inception.Utterance{{Role: inception.RoleUser, Text: "hello there"}}}
	plain, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCascade(skipGate{}, plain)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.Detect(ctx, in); err != nil || d.Rein || d.ModelVersion != "gate@sha256:0123456789ab" {
		t.Errorf("cascade skip: %+v, %v", d, err)
	}
}

// skipGate holds every turn back, naming its model version.
type skipGate struct{}

func (skipGate) Name() string { return "skip-gate" }
func (skipGate) Detect(context.Context, inception.Input) (inception.Decision, error) {
	return inception.Decision{TaxonomyVersion: "1", ModelVersion: "gate@sha256:0123456789ab"}, nil
}

// A promoted gate (WithGate) judges the next turns with the same model
// module, and the gate's counters run on rather than starting again.
func TestCascadeWithGateKeepsModelAndCounters(t *testing.T) {
	ctx := context.Background()
	in := inception.Input{Dialogue: []inception.Utterance{{Role: inception.RoleUser, Text: "hello there"}}}
	plain, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCascade(plain, plain)
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	c.OnGate = func(string) { calls++ }
	if _, err := c.Detect(ctx, in); err != nil {
		t.Fatal(err)
	}
	p, err := c.WithGate(skipGate{}, plain)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := p.Detect(ctx, in); err != nil || d.ModelVersion != "gate@sha256:0123456789ab" {
		t.Errorf("promoted gate: %+v, %v", d, err)
	}
	if st := p.Stats(); st.Turns != 2 || calls != 2 || p.Fallback != plain || p.model != plain {
		t.Errorf("stats %+v, OnGate called %d times, fallback and model kept: %v %v", st, calls, p.Fallback == plain, p.model == plain)
	}
	if _, err := c.WithGate(nil, nil); err == nil {
		t.Error("a cascade without a gate")
	}
}

// A turn the gate passes to the model records the gate's model version
// when the model's decision names none.
func TestCascadePassNamesTheGateModelVersion(t *testing.T) {
	model, err := NewLLM(LLMConfig{Client: inceptiontest.Answering(`{"rein":false,"error_type":null,"evidence":"","reasoning":""}`)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCascade(passGate{}, model)
	if err != nil {
		t.Fatal(err)
	}
	in := inception.Input{Dialogue: []inception.Utterance{{Role: inception.RoleUser, Text: "hello there"}}}
	if d, err := c.Detect(context.Background(), in); err != nil || d.ModelVersion != "gate@sha256:0123456789ab" {
		t.Errorf("cascade pass: %+v, %v", d, err)
	}
}

// passGate passes every turn, naming its model version.
type passGate struct{}

func (passGate) Name() string { return "pass-gate" }
func (passGate) Detect(context.Context, inception.Input) (inception.Decision, error) {
	return inception.Decision{Rein: true, ErrorType: "anaphora", TaxonomyVersion: "1", ModelVersion: "gate@sha256:0123456789ab"}, nil
}
