package rules

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/inception"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil"
)

func miniTools(t testing.TB, domain string) []llm.Tool {
	t.Helper()
	tools, err := llm.LoadToolList(filepath.Join(testutil.RepoRoot(t), "internal", "testutil", "inceptiontest", "testdata", "tools_"+domain+"_mini.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

func dialogue(texts ...string) []inception.Utterance {
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

// judgeAs runs m on in and fails the test unless it decides want (an
// error type, or "" for no activation); it returns the decision.
func judgeAs(t *testing.T, m inception.Module, in inception.Input, want string) inception.Decision {
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

// decisionProblem says what is wrong with a decision planted as is, or ""
// when nothing is: no activation carries nothing; an activation is a type
// of tax (not held out) with its category and recovery tool, a reasoning,
// and evidence that is empty or a quote of what the user said.
func decisionProblem(tax *inception.Taxonomy, d inception.Decision, said string) string {
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
	user := strings.Join(strings.Fields(inception.SanitizeUncapped(said)), " ")
	if q := strings.TrimSuffix(d.Evidence, "…"); q != "" && !strings.Contains(user, q) {
		return fmt.Sprintf("evidence %q is not a quote of the user's %q", d.Evidence, user)
	}
	return ""
}

func airlineInput(t testing.TB, texts ...string) inception.Input {
	return inception.Input{Tenant: "acme", Domain: "airline", Tools: miniTools(t, "airline"), Dialogue: dialogue(texts...)}
}

func mustType(t testing.TB, name string) *inception.ErrorType {
	et, ok := inception.DefaultTaxonomy().Type(name)
	if !ok {
		t.Fatalf("no type %s", name)
	}
	return et
}
