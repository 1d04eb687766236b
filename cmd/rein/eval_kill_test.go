package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/app/eval/run"
	rtest "github.com/reinception/rein/internal/testutil"
)

// A rein eval run process killed with SIGKILL mid-run continues where it
// stopped when the same command is run again: every play ends up in
// results.jsonl exactly once.
func TestEvalRunResumesAfterSIGKILL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary and kills it")
	}
	work := t.TempDir()
	bin := reinBinary(t)
	// Two domains and two conditions: four pipelines to stop and resume.
	scen := subsetScenarios(t, "air-ana-1", "ret-ud-1", "air-clean-1")
	dir := filepath.Join(work, "run")
	args := []string{"eval", "run", "--scenarios", scen, "--conditions", "none,rein", "--trials", "2", "--concurrency", "1", "--out", dir, "--taubench", rtest.TauBench(t)}
	env := append(os.Environ(), "TMPDIR="+work)

	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	rtest.CheckFor(t, 2*time.Minute, "three plays finished", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("rein eval run exited before the kill: %v", err)
		default:
		}
		return resultLines(t, dir) >= 3
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	before := resultLines(t, dir)
	const total = 2 * 3 * 2
	if before >= total {
		t.Fatalf("the run finished (%d plays) before it was killed", before)
	}

	again := exec.Command(bin, args...)
	again.Env = env
	out, err := again.CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming: ") {
		t.Errorf("the rerun did not resume:\n%s", out)
	}
	results, err := run.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The killed run's pipeline storage is cleared, the finished run's removed.
	if _, err := os.Stat(filepath.Join(dir, run.PipelinesDir)); !os.IsNotExist(err) {
		var left []string
		_ = filepath.WalkDir(filepath.Join(dir, run.PipelinesDir), func(p string, _ os.DirEntry, _ error) error {
			left = append(left, p)
			return nil
		})
		t.Errorf("pipelines storage left behind: %v %v", err, left)
	}
	if len(results) != total || resultLines(t, dir) != total {
		t.Errorf("%d results, %d lines after the resume; want %d each\n%s", len(results), resultLines(t, dir), total, out)
	}
}
