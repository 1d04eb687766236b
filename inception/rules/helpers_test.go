package rules

import (
	"path/filepath"
	"testing"

	"github.com/reinception/rein/inception"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil"
)

// taubenchDir returns ../shared/taubench relative to the module root, or
// skips the test when it is missing (fails when CI is set).
func taubenchDir(t testing.TB) string {
	t.Helper()
	return testutil.TauBench(t)
}

func domainTools(t testing.TB, domain string) []llm.Tool {
	t.Helper()
	tools, err := llm.LoadToolList(filepath.Join(taubenchDir(t), domain, "tools.json"))
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

// testProducts loads the τ-bench store's product catalogue (skipping as
// taubenchDir does when ../shared/taubench is missing).
func testProducts(t testing.TB) *ProductCatalogue {
	t.Helper()
	pc, err := LoadProductCatalogue(taubenchDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return pc
}
