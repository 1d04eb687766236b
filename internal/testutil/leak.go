package testutil

import (
	"testing"

	"go.uber.org/goleak"
)

// VerifyNoLeaks runs a package's tests (call it from TestMain) and then
// fails the run if any goroutine the tests started is still running: a
// stage's Run, a consumer, a sweeper or a connection that a test (or the
// code under it) did not stop. Every test ends its servers, connections
// and stages through t.Cleanup, so what is left is a leak.
func VerifyNoLeaks(m *testing.M) {
	goleak.VerifyTestMain(m, leakIgnores...)
}

// leakIgnores are the goroutines that outlive a clean shutdown by design,
// each with its reason. Keep it short: an ignore hides a leak for good.
var leakIgnores = []goleak.Option{}
