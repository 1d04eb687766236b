package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/bus"
)

// /readyz reports not ready while the node holding an R1 REIN_TURNS is
// down (the issue saw it stay ready through every outage), and ready
// again once it is back.
func TestReadyzFollowsStreamLeader(t *testing.T) {
	c := rtest.StartCluster(t, 3)
	c.WaitMetaLeader(30 * time.Second)
	httpAddr := freePort(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := runCLI(t, ctx, "serve", "--nats-url", c.URLs(), "--stages", "none", "--stream-replicas", "1",
			"--data-dir", t.TempDir(), "--http", httpAddr, "--log-level", "error")
		done <- err
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	}()
	status := func() int {
		client := http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	rtest.CheckFor(t, 60*time.Second, "serve ready", func() bool { return status() == http.StatusOK })
	leader := c.StreamLeader(bus.StreamTurns)
	if leader < 0 {
		t.Fatal("REIN_TURNS has no leader")
	}
	c.Stop(leader)
	rtest.CheckFor(t, 15*time.Second, "readyz 503 while REIN_TURNS has no leader", func() bool {
		return status() == http.StatusServiceUnavailable
	})
	c.Start(leader)
	rtest.CheckFor(t, 60*time.Second, "readyz 200 once the node is back", func() bool { return status() == http.StatusOK })
}
