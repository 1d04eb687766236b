package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
)

// Split across processes on an external NATS, the agent worker cannot use
// a key of its own data dir (the injector's process would sign with
// another): it refuses to start without --task-key, naming the flag.
func TestSplitStagesNeedASharedTaskKey(t *testing.T) {
	h := testutil.StartJetStream(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := runCLI(t, ctx, "serve", "--nats-url", h.URL(), "--nats-nkey", h.Keys.SeedFile(streams.IdentityAdmin),
		"--data-dir", t.TempDir(), "--http", "", "--stages", "agentworker", "--agent-backend", "none", "--log-level", "error")
	if err == nil || !strings.Contains(err.Error(), "--task-key") {
		t.Fatalf("agent worker alone on an external NATS without --task-key: %v, want a refusal naming --task-key", err)
	}
}
