package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// TestMain removes the rein binary that the process tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is this tree's rein binary, built by the first test that needs it.
var built struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

// reinBinary builds this tree's rein once per test run: linking it takes
// seconds to a minute on a busy machine, and every test that runs rein as a
// process (serve, eval run, kill -9) runs the same build.
func reinBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "rein-test-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "rein")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}
