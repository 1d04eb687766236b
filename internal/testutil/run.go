package testutil

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// Run starts run (a stage's Run) in the background and returns stop, which
// cancels it and waits for it to return, failing the test if it returned an
// error or did not drain within a minute. stop is idempotent and also
// registered as a cleanup.
func Run(t testing.TB, name string, run func(ctx context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
			case <-time.After(time.Minute):
				t.Errorf("%s did not drain within a minute", name)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Long reports whether the long variants of the tests run (REIN_LONG=1):
// every τ-bench trajectory instead of a fixed sample, for instance. CI
// runs the short ones, which keep every package well under Go's default
// per-package timeout on two cores.
func Long() bool { return os.Getenv("REIN_LONG") != "" }
