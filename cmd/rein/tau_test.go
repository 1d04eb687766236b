package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
)

func runTau(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"tau", "check"}, args...))
	err := root.Execute()
	return out.String(), err
}

// tauSampleDir writes the embedded airline sample data plus two tasks (and
// optionally an oracle) into a temporary τ-bench-style directory.
func tauSampleDir(t *testing.T, oracle string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := taubench.SampleFS(taubench.Airline)
	if err != nil {
		t.Fatal(err)
	}
	air := filepath.Join(dir, "airline")
	if err := os.MkdirAll(air, 0o755); err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(src, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(air, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	tasks := `[{"user_id": "nora_quist_4821", "instruction": "cancel", "actions": [{"name": "cancel_reservation", "kwargs": {"reservation_id": "K8DHX4"}}], "outputs": []},
	           {"user_id": "nora_quist_4821", "instruction": "look", "actions": [], "outputs": ["HAT505"]}]`
	if err := os.WriteFile(filepath.Join(air, "tasks_test.json"), []byte(tasks), 0o644); err != nil {
		t.Fatal(err)
	}
	if oracle != "" {
		if err := os.MkdirAll(filepath.Join(dir, "oracle"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "oracle", "gt_replay_airline_test.json"), []byte(oracle), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestTauCheckWithoutOracle(t *testing.T) {
	out, err := runTau(t, "--data", tauSampleDir(t, ""))
	if err != nil {
		t.Fatalf("check failed: %v\n%s", err, out)
	}
	if n := strings.Count(out, "(no oracle)"); n != 2 {
		t.Errorf("%d unverified task lines, want 2:\n%s", n, out)
	}
	want := `{"gt_tasks": 0, "gt_hash_match": 0, "gt_observation_match": 0, "gt_observations": 0, "trajectories": 0, "trajectory_reward_match": 0}`
	if got := lastLine(out); got != want {
		t.Errorf("summary %s", got)
	}
}

func TestTauCheckOracleMismatch(t *testing.T) {
	d, err := taubench.Sample(taubench.Airline)
	if err != nil {
		t.Fatal(err)
	}
	oracle := `{"domain": "airline", "split": "test", "initial_data_hash": "` + d.BaseFingerprint() + `", "tasks": [
	  {"task_index": 0, "gt_data_hash": "0000", "db_unchanged": false, "replay": [{"name": "cancel_reservation", "observation": "wrong"}], "changed_records": {}},
	  {"task_index": 1, "gt_data_hash": "` + d.BaseFingerprint() + `", "db_unchanged": true, "replay": [], "changed_records": {}}]}`
	out, err := runTau(t, "--data", tauSampleDir(t, oracle))
	var ee *exitError
	if !errors.As(err, &ee) || exitCode(err) != 1 {
		t.Fatalf("err = %v, want exit code 1\n%s", err, out)
	}
	want := `{"gt_tasks": 2, "gt_hash_match": 1, "gt_observation_match": 0, "gt_observations": 1, "trajectories": 0, "trajectory_reward_match": 0}`
	if got := lastLine(out); got != want {
		t.Errorf("summary %s\nwant    %s", got, want)
	}
	if !strings.Contains(out, "hash MISMATCH") || !strings.Contains(out, "records MISMATCH") {
		t.Errorf("mismatch lines missing:\n%s", out)
	}
}

func TestTauCheckNeedsData(t *testing.T) {
	if _, err := runTau(t); err == nil {
		t.Error("check without --data succeeded")
	}
	_, err := runTau(t, "--data", filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, taubench.ErrNoData) || exitCode(err) != 1 {
		t.Errorf("missing directory: %v", err)
	}
}

func TestTauCheckFixtures(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "..", "shared", "taubench")
	if _, err := os.Stat(filepath.Join(dir, "SPEC.md")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("τ-bench fixtures missing at %s", dir)
		}
		t.Skip("τ-bench fixtures not present")
	}
	out, err := runTau(t, "--data", dir)
	if err != nil {
		t.Fatalf("check failed: %v\n%s", err, lastLine(out))
	}
	want := `{"gt_tasks": 685, "gt_hash_match": 685, "gt_observation_match": 1525, "gt_observations": 1525, "trajectories": 200, "trajectory_reward_match": 200}`
	if got := lastLine(out); got != want {
		t.Errorf("summary %s", got)
	}
}
