package detector

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
func trajectoryTurns(t testing.TB) [][]Utterance {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(taubenchDir(t), "trajectories", "gpt-4o-airline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		Traj []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"traj"`
	}
	if err := json.Unmarshal(data, &runs); err != nil {
		t.Fatal(err)
	}
	var out [][]Utterance
	for _, r := range runs {
		var dlg []Utterance
		for _, m := range r.Traj {
			if m.Content == nil || *m.Content == "" {
				continue
			}
			switch m.Role {
			case "user":
				dlg = append(dlg, Utterance{Role: RoleUser, Text: *m.Content})
				out = append(out, append([]Utterance(nil), dlg...))
			case "assistant":
				dlg = append(dlg, Utterance{Role: RoleAgent, Text: *m.Content})
			}
		}
	}
	return out
}
