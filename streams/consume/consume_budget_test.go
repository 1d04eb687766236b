package consume_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// TestInFlightBytesStayWithinTheBudget: behind a slow handler, the consume
// loop holds (queues or handles) no more than its byte budget of messages
// although the server could deliver them all at once, it fills the budget
// (back-pressure, not starvation), and every message is handled exactly
// once; when they are done the budget is all given back.
func TestInFlightBytesStayWithinTheBudget(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	const n, budget = 60, 100_000
	text := strings.Repeat("x", 20_000)
	var outs []streams.Out
	for i := range n {
		outs = append(outs, *bustest.TurnEvent(t, "acme", fmt.Sprintf("b%02d", i), 1, text))
	}
	bustest.PublishTurns(t, h, outs)

	release := make(chan struct{})
	var seen sync.Map
	var handled, dups, entered atomic.Int64
	handler := func(ctx context.Context, d streams.Decoded) error {
		entered.Add(1)
		<-release
		if _, dup := seen.LoadOrStore(d.Event.ID(), true); dup {
			dups.Add(1)
		}
		handled.Add(1)
		return nil
	}
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "budget", Filter: []string{bus.UserTurnsAll},
		MaxInFlight: 2, MaxInFlightBytes: budget}
	c, err := consume.NewConsumer(cfg, consume.ConsumerDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: bustest.Quiet}, handler)
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "consumer", c.Run)
	// Two handlers wait; the loop holds what fits in the budget beside them.
	rtest.CheckFor(t, 30*time.Second, "the budget filled behind the slow handlers", func() bool {
		held, _ := consume.InFlightBytes(c)
		return entered.Load() == 2 && held > budget-25_000
	})
	close(release)
	rtest.CheckFor(t, time.Minute, "every message handled", func() bool { return handled.Load() >= n })
	held, peak := consume.InFlightBytes(c)
	if peak > budget {
		t.Errorf("the loop held %d bytes at once, budget %d", peak, budget)
	}
	rtest.CheckFor(t, 10*time.Second, "the budget given back", func() bool { held, _ = consume.InFlightBytes(c); return held == 0 })
	if d := dups.Load(); d != 0 || handled.Load() != n {
		t.Errorf("%d handled, %d twice; want %d once each", handled.Load(), d, n)
	}
}
