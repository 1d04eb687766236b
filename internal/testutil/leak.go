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
//
// It is empty: the embedded nats-server needs none, since StartJetStream's
// cleanup shuts the server down and waits for it (WaitForShutdown), and
// nats.go's connection goroutines end with Close. It held nothing when
// the full tests of streams, detector, injector, agentworker and
// escalation first ran under it.
var leakIgnores = []goleak.Option{}
