package testutil

import (
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
