package testutil

import (
	"testing"
	"time"
)

// CheckFor polls cond every few milliseconds until it returns true or the
// deadline passes, then fails the test with msg. Tests use it instead of
// sleeping.
func CheckFor(t testing.TB, within time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	wait := time.Millisecond
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", within, msg)
		}
		time.Sleep(wait)
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}
