package testutil

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// TauBench returns ../shared/taubench beside the repository. When it is
// missing the test is skipped on a user's machine and fails in CI (CI set).
func TauBench(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "..", "shared", "taubench")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("τ-bench fixtures missing at %s (required in CI)", dir)
		}
		t.Skipf("τ-bench fixtures not found at %s", dir)
	}
	return dir
}

// Utterance is one surface message of a recorded τ-bench conversation:
// role "user" or "agent".
type Utterance struct{ Role, Text string }

// TrajectoryDialogues returns, for every user message of the recorded
// τ-bench conversations of a domain (trajectories/gpt-4o-<domain>.json),
// the surface dialogue up to it.
func TrajectoryDialogues(t testing.TB, domain string) [][]Utterance {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(TauBench(t), "trajectories", "gpt-4o-"+domain+".json"))
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
				dlg = append(dlg, Utterance{"user", *m.Content})
				out = append(out, append([]Utterance(nil), dlg...))
			case "assistant":
				dlg = append(dlg, Utterance{"agent", *m.Content})
			}
		}
	}
	return out
}
