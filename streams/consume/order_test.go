package consume_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// A holder dies with a conversation's turn 1 unacked; the next holder is
// delivered turn 2 at once and turn 1 only after AckWait. Turn 2 must not
// run first, and other conversations must not wait for it.
func TestOrderHoldsAfterAHolderDies(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "order", Filter: []string{bus.UserTurnsAll},
		AckWait: 2 * time.Second}
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "a", 1, "first")})
	h.DeliverAbandoned(t, bus.StreamTurns, cfg.ConsumerConfigJS(), 1)
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "a", 2, "second"), *bustest.TurnEvent(t, "acme", "b", 1, "other")})

	var mu sync.Mutex
	var order []string
	reg := prometheus.NewRegistry()
	bustest.RunConsumer(t, h, cfg, reg, func(_ context.Context, d streams.Decoded) error {
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
			outs = append(outs, *bustest.TurnEvent(t, "acme", fmt.Sprintf("slow%d", c), turn, "x"))
		}
	}
	bustest.PublishTurns(t, h, outs)
	var mu sync.Mutex
	last := map[string]int{}
	var violations, handled, now, peak atomic.Int64
	// The model answers once 500 conversations wait on it at once (or
	// after a long while, which only a scheduler that serialises them
	// reaches): a causal check, not a race between a 200 ms model and the
	// delivery rate of a loaded machine (which reached 376 once).
	const want = 500
	busy := make(chan struct{})
	var once sync.Once
	bustest.RunConsumer(t, h, consume.ConsumerConfig{}, nil, func(ctx context.Context, d streams.Decoded) error {
		n := now.Add(1)
		defer now.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n >= want {
			once.Do(func() { close(busy) })
		}
		mu.Lock()
		if d.Meta.Turn != last[d.Meta.Conversation]+1 {
			violations.Add(1)
		}
		last[d.Meta.Conversation] = d.Meta.Turn
		mu.Unlock()
		select { // the model's time
		case <-busy:
		case <-time.After(20 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		handled.Add(1)
		return nil
	})
	rtest.CheckFor(t, 4*time.Minute, "every turn handled", func() bool { return handled.Load() == convs*turns })
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d turns ran out of order", v)
	}
	if p := peak.Load(); p < want {
		t.Fatalf("at most %d conversations waited on the model at once, want hundreds", p)
	}
}

// After a fail-over the ack floor can wait on an unrelated message (here
// conversation x's turn, redelivered and slow) while a conversation's
// earlier turn was already decided by the other replica. The gate must
// not hold the later turn until MaxHold: the stage's Stored answer says
// the earlier turn's outputs are stored. Without the hook this test's
// turn a2 is held until MaxHold, counted as a timeout.
func TestOrderGateReleasesATurnWhosePredecessorAnotherReplicaDecided(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	var settledAsked atomic.Int32
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "order-settled", Filter: []string{bus.UserTurnsAll},
		AckWait: 2 * time.Second, MaxHold: 15 * time.Second}
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "x", 1, "slow"), *bustest.TurnEvent(t, "acme", "a", 1, "first")})

	// The other replica: holds x1 and never acks it (it dies), decides and
	// acks a1 (its outputs are stored: the hook below says so).
	group := cfg.ConsumerConfigJS().PriorityGroups[0]
	cons, err := h.JS.CreateOrUpdateConsumer(ctx, bus.StreamTurns, cfg.ConsumerConfigJS())
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(2, jetstream.FetchPriorityGroup(group), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if strings.HasSuffix(m.Subject(), ".a.user") {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := h.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UnpinConsumer(ctx, cfg.Durable, group); err != nil {
		t.Fatal(err)
	}
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "a", 2, "second")})

	cfg.Stored = func(_ context.Context, _ streams.OutputStreams, d streams.Decoded) (streams.Stored, error) {
		if d.Delivered > 0 {
			return streams.StoredNone, nil // the loop's own check of a delivered input
		}
		settledAsked.Add(1)
		if d.Meta.Conversation == "a" && d.Meta.Turn == 1 {
			return streams.StoredAll, nil
		}
		return streams.StoredNone, nil
	}
	a2done := make(chan struct{})
	var mu sync.Mutex
	var order []string
	reg := prometheus.NewRegistry()
	bustest.RunConsumer(t, h, cfg, reg, func(hctx context.Context, d streams.Decoded) error {
		name := d.Meta.Conversation + string(rune('0'+d.Meta.Turn))
		if name == "x1" {
			// Slow: the floor stays below a1 until a2 has run.
			select {
			case <-a2done:
			case <-time.After(20 * time.Second):
			case <-hctx.Done():
			}
		}
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		if name == "a2" {
			close(a2done)
		}
		return nil
	})
	rtest.CheckFor(t, 30*time.Second, "x1 and a2 handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 2
	})
	mu.Lock()
	got := append([]string(nil), order...)
	mu.Unlock()
	if v := testutil.ToFloat64(mustCounter(t, reg, "rein_stage_order_holds_total", "timeout")); v != 0 {
		t.Fatalf("%v holds timed out: a2 waited for MaxHold although a1 was settled", v)
	}
	if got[0] != "a2" {
		t.Fatalf("handled %v: a2 waited for the unrelated x1", got)
	}
	if settledAsked.Load() == 0 {
		t.Fatal("the gate never asked whether a1 was settled")
	}
}
