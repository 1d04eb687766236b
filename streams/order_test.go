package streams_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
)

// A holder dies with a conversation's turn 1 unacked; the next holder is
// delivered turn 2 at once and turn 1 only after AckWait. Turn 2 must not
// run first, and other conversations must not wait for it.
func TestOrderHoldsAfterAHolderDies(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	cfg := streams.ConsumerConfig{Stage: "test", Stream: streams.StreamTurns, Durable: "order", Filter: []string{streams.UserTurnsAll},
		AckWait: 2 * time.Second}
	publishTurns(t, h, []streams.Out{*turnEvent(t, "acme", "a", 1, "first")})
	h.DeliverAbandoned(t, streams.StreamTurns, cfg.ConsumerConfigJS(), 1)
	publishTurns(t, h, []streams.Out{*turnEvent(t, "acme", "a", 2, "second"), *turnEvent(t, "acme", "b", 1, "other")})

	var mu sync.Mutex
	var order []string
	reg := prometheus.NewRegistry()
	runConsumer(t, h, cfg, reg, func(_ context.Context, d streams.Decoded) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, d.Meta.Conversation+string(rune('0'+d.Meta.Turn)))
		return nil
	})
	rtest.CheckFor(t, 30*time.Second, "three turns handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 3
	})
	mu.Lock()
	got := append([]string(nil), order...)
	mu.Unlock()
	pos := map[string]int{}
	for i, s := range got {
		pos[s] = i
	}
	if pos["a1"] > pos["a2"] {
		t.Fatalf("conversation a ran turn 2 before turn 1: %v", got)
	}
	if pos["b1"] > pos["a1"] {
		t.Fatalf("conversation b waited for conversation a's redelivery: %v", got)
	}
	holds, err := testutil.GatherAndCount(reg, "rein_stage_order_holds_total")
	if err != nil || holds == 0 {
		t.Fatalf("no hold recorded (%d series, %v)", holds, err)
	}
	if v := testutil.ToFloat64(mustCounter(t, reg, "rein_stage_order_holds_total", "timeout")); v != 0 {
		t.Fatalf("%v holds timed out; the earlier turn came back within AckWait", v)
	}
}

func mustCounter(t *testing.T, reg *prometheus.Registry, name, outcome string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					c.Add(m.GetCounter().GetValue())
				}
			}
		}
	}
	return c
}

// A thousand conversations waiting on a slow model at once: each
// conversation's turns still run one at a time and in order, and the
// conversations wait side by side (with the old hash-partitioned workers,
// 32 of them, at most 32 could wait at once).
func TestOrderHoldsWithAThousandConversationsWaitingOnASlowModel(t *testing.T) {
	const convs, turns = 1000, 3
	h := rtest.StartJetStream(t, "")
	outs := make([]streams.Out, 0, convs*turns)
	for turn := 1; turn <= turns; turn++ {
		for c := 0; c < convs; c++ {
			outs = append(outs, *turnEvent(t, "acme", fmt.Sprintf("slow%d", c), turn, "x"))
		}
	}
	publishTurns(t, h, outs)
	var mu sync.Mutex
	last := map[string]int{}
	var violations, handled, now, peak atomic.Int64
	runConsumer(t, h, streams.ConsumerConfig{}, nil, func(ctx context.Context, d streams.Decoded) error {
		n := now.Add(1)
		defer now.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		mu.Lock()
		if d.Meta.Turn != last[d.Meta.Conversation]+1 {
			violations.Add(1)
		}
		last[d.Meta.Conversation] = d.Meta.Turn
		mu.Unlock()
		select { // the model's time
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		handled.Add(1)
		return nil
	})
	rtest.CheckFor(t, 2*time.Minute, "every turn handled", func() bool { return handled.Load() == convs*turns })
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d turns ran out of order", v)
	}
	if p := peak.Load(); p < 500 {
		t.Fatalf("at most %d conversations waited on the model at once, want hundreds", p)
	}
}
