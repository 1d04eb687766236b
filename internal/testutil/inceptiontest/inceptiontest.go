// Package inceptiontest holds what the tests of the inception modules
// share: a fake model client, the small tool catalogues, dialogue
// builders, the τ-bench fixtures as inception types, and the check that a
// decision is well formed. It serves tests only.
package inceptiontest

import (
	"context"
	"embed"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil"
)

//go:embed testdata/tools_*_mini.json
var miniFS embed.FS

// FakeClient is an llm.Client whose answers come from Reply; it records
// every request.
type FakeClient struct {
	Reply func(ctx context.Context, req llm.Request) (llm.Response, error)

	mu    sync.Mutex
	calls []llm.Request
}

// Chat records req and returns Reply's answer.
func (f *FakeClient) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	f.mu.Unlock()
	return f.Reply(ctx, req)
}

// Provider names the fake provider.
func (f *FakeClient) Provider() string { return "fake" }

// Model names the fake model.
func (f *FakeClient) Model() string { return "fake-model" }

// Requests returns a copy of the requests seen so far.
func (f *FakeClient) Requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.calls...)
}

// Answering returns a client that answers every request with content.
func Answering(content string) *FakeClient {
	return &FakeClient{Reply: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Content: content, Model: "fake-model", Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}}, nil
	}}
}

// MiniTools returns a small tool catalogue of domain (airline or retail).
func MiniTools(t testing.TB, domain string) []llm.Tool {
	t.Helper()
	data, err := miniFS.ReadFile("testdata/tools_" + domain + "_mini.json")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := llm.ParseToolList(data)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// Dialogue alternates user and agent utterances, the user first.
func Dialogue(texts ...string) []inception.Utterance {
	out := make([]inception.Utterance, len(texts))
	for i, s := range texts {
		role := inception.RoleUser
		if i%2 == 1 {
			role = inception.RoleAgent
		}
		out[i] = inception.Utterance{Role: role, Text: s}
	}
	return out
}

// JudgeAs runs m on in and fails unless it activates with want ("" for
// no activation).
func JudgeAs(t *testing.T, m inception.Module, in inception.Input, want string) inception.Decision {
	t.Helper()
	d, err := m.Detect(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if d.ErrorType != want || d.Rein != (want != "") {
		t.Fatalf("got %q (evidence %q), want %q", d.ErrorType, d.Evidence, want)
	}
	return d
}

// DecisionProblem returns what is wrong with d, a decision on the user's
// words said, or "": a non-activation carries nothing, an activation
// names a visible type with its category and tool, and its evidence
// quotes the user.
func DecisionProblem(tax *inception.Taxonomy, d inception.Decision, said string) string {
	if !d.Rein {
		if d.ErrorType != "" || d.Evidence != "" || d.Reasoning != "" {
			return fmt.Sprintf("no activation, yet %+v", d)
		}
		return ""
	}
	typ, ok := tax.Type(d.ErrorType)
	if !ok || typ.HeldOut || d.Category != typ.Category || d.RecoveryTool != typ.RecoveryTool || d.Reasoning == "" {
		return fmt.Sprintf("malformed activation %+v", d)
	}
	user := strings.Join(strings.Fields(planted.SanitizeUncapped(said)), " ")
	if q := strings.TrimSuffix(d.Evidence, "…"); q != "" && !strings.Contains(user, q) {
		return fmt.Sprintf("evidence %q is not a quote of the user's %q", d.Evidence, user)
	}
	return ""
}

// DomainTools returns τ-bench's full tool catalogue of domain.
func DomainTools(t testing.TB, domain string) []llm.Tool {
	t.Helper()
	tools, err := llm.LoadToolList(filepath.Join(testutil.TauBench(t), domain, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// TrajectoryTurns returns τ-bench's recorded airline dialogues as
// inception utterances.
func TrajectoryTurns(t testing.TB) [][]inception.Utterance {
	t.Helper()
	var out [][]inception.Utterance
	for _, dlg := range testutil.TrajectoryDialogues(t, "airline") {
		turns := make([]inception.Utterance, len(dlg))
		for i, u := range dlg {
			turns[i] = inception.Utterance{Role: u.Role, Text: u.Text}
		}
		out = append(out, turns)
	}
	return out
}

// AirlineInput is a turn of tenant acme in the airline domain with the
// small airline catalogue and texts as its dialogue.
func AirlineInput(t testing.TB, texts ...string) inception.Input {
	return inception.Input{Tenant: "acme", Domain: "airline", Tools: MiniTools(t, "airline"), Dialogue: Dialogue(texts...)}
}

// MustType returns the default taxonomy's type name.
func MustType(t testing.TB, name string) *inception.ErrorType {
	et, ok := inception.DefaultTaxonomy().Type(name)
	if !ok {
		t.Fatalf("no type %s", name)
	}
	return et
}

// TinyGate is a hand-made gate model: "frobnicate" points at
// multiple_interpretation, "zork" at anaphora, everything else is clean.
func TinyGate() *learned.GateModel {
	return &learned.GateModel{
		Format:    learned.GateModelFormat,
		Classes:   []string{inception.CleanClass, inception.TypeAnaphora, inception.TypeMultipleInterpretation},
		Threshold: 0.5,
		Bias:      []float64{2, 0, 0},
		Weights: map[string][]float64{
			"w:frobnicate": {0, 0, 5},
			"w:zork":       {0, 4, 0},
		},
	}
}
