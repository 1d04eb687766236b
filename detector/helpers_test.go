package detector

import (
	"path/filepath"
	"testing"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil"
)

// dialogue alternates user and agent utterances, user first.
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

// miniTools is a small tool catalogue of a domain, from the inception
// package's test data.
func miniTools(t testing.TB, domain string) []llm.Tool {
	t.Helper()
	tools, err := llm.LoadToolList(filepath.Join("..", "internal", "testutil", "inceptiontest", "testdata", "tools_"+domain+"_mini.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// trajectoryTurns returns, for every user message of the recorded τ-bench
// airline conversations, the surface dialogue up to it.
func trajectoryTurns(t testing.TB) [][]inception.Utterance {
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
