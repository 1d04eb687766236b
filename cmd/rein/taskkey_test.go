package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/natsserver"
)

// On an external NATS a key of the process's own data dir would not do:
// the injector of one replica signs what the agent worker of another
// checks after a fail-over (which once dead-lettered every task after a
// node loss in the cluster chaos test). Whether it runs one stage or all,
// serve refuses to start without --task-key, naming the flag.
func TestExternalNATSNeedsASharedTaskKey(t *testing.T) {
	h := testutil.StartJetStream(t, "")
	for _, stages := range []string{"agentworker", "all"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := runCLI(t, ctx, "serve", "--nats-url", h.URL(), "--nats-nkey", h.Keys.SeedFile(natsserver.IdentityAdmin),
			"--data-dir", t.TempDir(), "--http", "", "--stages", stages, "--agent-backend", "none", "--log-level", "error")
		cancel()
		if err == nil || !strings.Contains(err.Error(), "--task-key") {
			t.Fatalf("--stages %s on an external NATS without --task-key: %v, want a refusal naming --task-key", stages, err)
		}
	}
}
