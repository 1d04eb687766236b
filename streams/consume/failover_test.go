package consume_test

import (
	"context"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// A stage replica that dies without a word (kill -9: no unpin, no drain)
// loses its pin within the default pin TTL, and the standby replica takes
// the stage over: the next turn is handled within 15 s. (The pin once
// stayed with the dead client for twice the ack wait, 60 s or more.)
func TestStandbyReplicaTakesOverACrashedOne(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "failover",
		Filter: []string{bus.UserTurnsAll}, AckWait: 30 * time.Second}
	handled := make(chan string, 16)
	// replica starts one replica on its own connection and returns what
	// crashes it: closing the socket, so that Run never unpins.
	replica := func(name string) (crash func()) {
		return crashableReplica(t, h, cfg, nil, func(_ context.Context, d streams.Decoded) error {
			handled <- name + ":" + d.Meta.Conversation
			return nil
		})
	}
	crash := replica("active")
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "c1", 1, "first")})
	if got := <-handled; got != "active:c1" {
		t.Fatalf("first turn handled by %s, want the active replica", got)
	}
	replica("standby")
	// The standby is running when the active one dies: both have pulls
	// waiting on the consumer (the clock below measures the fail-over,
	// not the standby's start-up on a loaded machine).
	rtest.CheckFor(t, 30*time.Second, "both replicas pulling", func() bool {
		c, err := h.JS.Consumer(t.Context(), cfg.Stream, cfg.Durable)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumWaiting >= 2
	})
	crash()
	start := time.Now()
	// A turn published before the server has seen the socket close can be
	// delivered to the dead replica's last pull and waits out AckWait like
	// any turn in flight at a crash; this test measures the pin's hand-over
	// of what arrives after the crash, so it publishes once the dead
	// replica's pulls are gone.
	rtest.CheckFor(t, 30*time.Second, "the crashed replica's pulls gone", func() bool {
		c, err := h.JS.Consumer(t.Context(), cfg.Stream, cfg.Durable)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumWaiting < 2
	})
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "c2", 1, "after the crash")})
	select {
	case got := <-handled:
		if got != "standby:c2" {
			t.Fatalf("after the crash: handled by %s, want the standby", got)
		}
		t.Logf("standby took over after %s", time.Since(start).Round(100*time.Millisecond))
	case <-time.After(15 * time.Second):
		t.Fatal("the standby replica did not take the stage over within 15s of the active one's crash")
	}
}
