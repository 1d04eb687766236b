package consume_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

func TestOrderingPerConversation(t *testing.T) {
	const convs, turns = 1000, 20
	if testing.Short() {
		t.Skip("long")
	}
	h := rtest.StartJetStream(t, "")
	// Interleave: turn 1 of every conversation, then turn 2, …
	outs := make([]streams.Out, 0, convs*turns)
	for turn := 1; turn <= turns; turn++ {
		for c := 0; c < convs; c++ {
			outs = append(outs, *bustest.TurnEvent(t, "acme", fmt.Sprintf("c%d", c), turn, "x"))
		}
	}
	bustest.PublishTurns(t, h, outs)

	var mu sync.Mutex
	last := map[string]int{}
	var active sync.Map // conversation → handling now
	var violations, handled atomic.Int64
	bustest.RunConsumer(t, h, consume.ConsumerConfig{MaxInFlight: 8}, nil, func(_ context.Context, d streams.Decoded) error {
		if _, busy := active.LoadOrStore(d.Meta.Conversation, true); busy {
			violations.Add(1) // two turns of one conversation at once
		}
		defer active.Delete(d.Meta.Conversation)
		mu.Lock()
		if d.Meta.Turn != last[d.Meta.Conversation]+1 {
			violations.Add(1)
		}
		last[d.Meta.Conversation] = d.Meta.Turn
		mu.Unlock()
		handled.Add(1)
		return nil
	})
	rtest.CheckFor(t, 2*time.Minute, "all turns handled", func() bool { return handled.Load() == convs*turns })
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d ordering violations", v)
	}
}

func TestRetryThenSuccessYieldsOneOutput(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	var calls atomic.Int32
	bustest.RunConsumer(t, h, consume.ConsumerConfig{Backoff: time.Millisecond}, reg, func(ctx context.Context, d streams.Decoded) error {
		// The output is published before the failure, as a handler that
		// dies after publishing would: the deterministic id dedupes it.
		ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("agent", d.Meta.Tenant, d.Meta.Conversation, d.Meta.Turn), "",
			d.Meta, schemas.Turn{Role: schemas.RoleAgent, Text: "ok", Turn: d.Meta.Turn})
		if err != nil {
			return err
		}
		if _, err := pub.Publish(ctx, bus.StreamTurns, bus.TurnSubject(d.Meta.Tenant, d.Meta.Conversation, schemas.RoleAgent), &ev); err != nil {
			return err
		}
		if calls.Add(1) <= 2 {
			return errors.New("transient")
		}
		return nil
	})
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "r1", 1, "hi")})
	rtest.CheckFor(t, 10*time.Second, "handled after two failures", func() bool {
		return testutil.ToFloat64(counter(reg, "ack")) == 1
	})
	if got := calls.Load(); got != 3 {
		t.Errorf("handler calls = %d, want 3", got)
	}
	if got := testutil.ToFloat64(counter(reg, "retry")); got != 2 {
		t.Errorf("retries = %v, want 2", got)
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 2 { // the user turn and exactly one agent turn
		t.Errorf("REIN_TURNS holds %d messages, want 2", n)
	}
}

func counter(reg *prometheus.Registry, outcome string) prometheus.Collector {
	return telemetry.NewCounterVec(reg, telemetry.MStageMessages, "Messages handled by a stage, by outcome (ack, stored, retry, dlq, requeue, unavailable).", "stage", "outcome").WithLabelValues("test", outcome)
}

func TestMalformedInputGoesToDLQAndConsumerKeepsGoing(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	var good atomic.Int32
	bustest.RunConsumer(t, h, consume.ConsumerConfig{Quarantine: true}, reg, func(context.Context, streams.Decoded) error {
		good.Add(1)
		return nil
	})
	bad := bustest.BadMessages(t)
	for name, m := range bad {
		m.Header.Del("Nats-Msg-Id")
		if m.Subject != "rein.turns.acme.bad-1.user" && name != "subject mismatch" {
			t.Fatalf("unexpected subject %s", m.Subject)
		}
		if _, err := h.JS.PublishMsg(context.Background(), m); err != nil {
			t.Fatalf("%s: raw publish: %v", name, err)
		}
	}
	// A poison message never blocks the good ones behind it.
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "bad-1", 1, "fine"), *bustest.TurnEvent(t, "acme", "ok", 1, "fine")})
	rtest.CheckFor(t, 20*time.Second, "all bad messages dead-lettered", func() bool {
		return h.StreamMsgs(t, bus.StreamDLQ) == uint64(len(bad)) && good.Load() == 2
	})
	if got := testutil.ToFloat64(counter(reg, "dlq")); got != float64(len(bad)) {
		t.Errorf("dlq outcome = %v, want %d", got, len(bad))
	}
	// Quarantine: the turns stream keeps only the valid turns.
	rtest.CheckFor(t, 5*time.Second, "quarantined messages deleted", func() bool {
		return h.StreamMsgs(t, bus.StreamTurns) == 2
	})
	// Every dead letter names its reason and keeps the original body.
	reasons := readDLQ(t, h)
	if len(reasons) != len(bad) {
		t.Fatalf("read %d dead letters, want %d", len(reasons), len(bad))
	}
	for _, dl := range reasons {
		if dl.Reason == "" || dl.Stage != "test" || dl.Subject == "" {
			t.Errorf("incomplete dead letter: %+v", dl)
		}
	}
}

func TestHandlerPermanentErrorAndPanicAreDeadLettered(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	bustest.RunConsumer(t, h, consume.ConsumerConfig{}, nil, func(_ context.Context, d streams.Decoded) error {
		if d.Meta.Conversation == "panics" {
			panic("boom")
		}
		return streams.Permanent(errors.New("no such reservation"))
	})
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "panics", 1, "x"), *bustest.TurnEvent(t, "acme", "perm", 1, "x")})
	rtest.CheckFor(t, 10*time.Second, "two dead letters", func() bool { return h.StreamMsgs(t, bus.StreamDLQ) == 2 })
	// Valid turns that failed in a handler stay in the source stream.
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 2 {
		t.Errorf("REIN_TURNS = %d, want 2", n)
	}
}

func TestDrainOnShutdownLosesNothing(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	const n = 200
	var outs []streams.Out
	for i := 0; i < n; i++ {
		outs = append(outs, *bustest.TurnEvent(t, "acme", fmt.Sprintf("d%d", i%10), i/10+1, "x"))
	}
	bustest.PublishTurns(t, h, outs)

	seen := sync.Map{}
	var count atomic.Int32
	release := make(chan struct{})
	entered := make(chan struct{}, 2*n)
	handler := func(ctx context.Context, d streams.Decoded) error {
		entered <- struct{}{}
		<-release // in flight when shutdown begins
		if _, dup := seen.LoadOrStore(d.Event.ID(), true); !dup {
			count.Add(1)
		}
		return nil
	}
	stop := bustest.RunConsumer(t, h, consume.ConsumerConfig{Durable: "drain", Stream: bus.StreamTurns, Filter: []string{bus.UserTurnsAll}, MaxInFlight: 4}, nil, handler)
	// Shut down while a handler is in flight. (How many workers hold a
	// message depends on how the ten conversations hash to partitions.)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no handler started")
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	close(release) // let in-flight handlers finish during the drain
	<-stopped
	// A second run of the same durable picks up whatever was released.
	bustest.RunConsumer(t, h, consume.ConsumerConfig{Durable: "drain", Stream: bus.StreamTurns, Filter: []string{bus.UserTurnsAll}, MaxInFlight: 4}, nil, handler)
	rtest.CheckFor(t, 30*time.Second, "every message handled exactly once across the restart", func() bool { return count.Load() == n })
}

// A message whose earlier delivery was not acked comes back with its
// delivery count, which tells a stage to look for outputs stored before.
func TestRedeliveryIsCounted(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "again", 1, "x"), *bustest.TurnEvent(t, "acme", "again", 2, "x")})
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "again", Filter: []string{bus.UserTurnsAll}}
	h.DeliverUnacked(t, bus.StreamTurns, cfg.ConsumerConfigJS(), 1)
	var mu sync.Mutex
	delivered := map[int]uint64{}
	bustest.RunConsumer(t, h, cfg, nil, func(_ context.Context, d streams.Decoded) error {
		mu.Lock()
		defer mu.Unlock()
		delivered[d.Meta.Turn] = d.Delivered
		return nil
	})
	rtest.CheckFor(t, 30*time.Second, "both turns handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered) == 2
	})
	if delivered[1] != 2 || delivered[2] != 1 {
		t.Errorf("delivery counts %v, want turn 1 delivered twice and turn 2 once", delivered)
	}
}

// The loop asks the stage what of an input's outputs is stored before it
// runs an input delivered again or an old one, and only then: all stored,
// the input is acked without its handler (counted "stored"); some, the
// handler is told; a first delivery within the recheck age is not asked
// about. The output streams, looked up once, are handed to the stage.
func TestLoopAsksWhatIsStoredBeforeRedeliveredOrOldInput(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "all", 1, "x"), *bustest.TurnEvent(t, "acme", "some", 1, "x"),
		*bustest.TurnEvent(t, "acme", "fresh", 1, "x")})
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "stored", Filter: []string{bus.UserTurnsAll},
		Outputs: []string{bus.StreamDetections}, RecheckAfter: time.Hour}
	h.DeliverUnacked(t, bus.StreamTurns, cfg.ConsumerConfigJS(), 2) // all's and some's
	var mu sync.Mutex
	asked, handled := map[string]bool{}, map[string]streams.Stored{}
	cfg.Stored = func(_ context.Context, out streams.OutputStreams, d streams.Decoded) (streams.Stored, error) {
		mu.Lock()
		defer mu.Unlock()
		if out[bus.StreamDetections] == nil {
			t.Errorf("the output stream was not handed to Stored: %v", out)
		}
		asked[d.Meta.Conversation] = true
		if d.Meta.Conversation == "all" {
			return streams.StoredAll, nil
		}
		return streams.StoredSome, nil
	}
	reg := prometheus.NewRegistry()
	bustest.RunConsumer(t, h, cfg, reg, func(_ context.Context, d streams.Decoded) error {
		mu.Lock()
		defer mu.Unlock()
		handled[d.Meta.Conversation] = d.Outputs
		return nil
	})
	h.WaitAcked(t, 30*time.Second, bus.StreamTurns, "stored", 3)
	mu.Lock()
	defer mu.Unlock()
	if _, ran := handled["all"]; ran {
		t.Error("the handler ran for an input whose outputs are all stored")
	}
	if got, ok := handled["some"]; !ok || got != streams.StoredSome {
		t.Errorf("some's handler saw Outputs %v (ran %v), want StoredSome", got, ok)
	}
	if got, ok := handled["fresh"]; !ok || got != streams.StoredNone || asked["fresh"] {
		t.Errorf("fresh: handled with %v (ran %v), asked %v: a first delivery within the recheck age is run unasked", got, ok, asked["fresh"])
	}
	if n := testutil.ToFloat64(counter(reg, "stored")); n != 1 {
		t.Errorf("rein_stage_messages_total{outcome=stored} = %v, want 1", n)
	}

	// Past the recheck age every input is asked about, delivered once or not.
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "all", 2, "x")})
	cfg.Durable, cfg.RecheckAfter = "old", time.Nanosecond
	mu.Unlock()
	bustest.RunConsumer(t, h, cfg, nil, func(_ context.Context, d streams.Decoded) error {
		mu.Lock()
		defer mu.Unlock()
		handled[d.Meta.Conversation+"-old"] = d.Outputs
		return nil
	})
	h.WaitAcked(t, 30*time.Second, bus.StreamTurns, "old", 4)
	mu.Lock()
	if _, ran := handled["all-old"]; ran || handled["fresh-old"] != streams.StoredSome {
		t.Errorf("old inputs handled %v: want all's skipped and the others told StoredSome", handled)
	}
}

func TestRestartOnSameDataDirKeepsMessages(t *testing.T) {
	dir := t.TempDir()
	h := rtest.StartJetStream(t, dir)
	var outs []streams.Out
	for i := 1; i <= 50; i++ {
		outs = append(outs, *bustest.TurnEvent(t, "acme", "keep", i, "x"))
	}
	bustest.PublishTurns(t, h, outs)
	h.Stop()
	h2 := rtest.StartJetStream(t, dir)
	if n := h2.StreamMsgs(t, bus.StreamTurns); n != 50 {
		t.Fatalf("after restart REIN_TURNS = %d, want 50", n)
	}
	// Provisioning again is idempotent and keeps the data.
	if err := natsserver.Provision(context.Background(), h2.JS, natsserver.DefaultProvision(), nil); err != nil {
		t.Fatal(err)
	}
	if n := h2.StreamMsgs(t, bus.StreamTurns); n != 50 {
		t.Fatalf("after re-provision REIN_TURNS = %d, want 50", n)
	}
}

// Two replicas of a stage share one durable consumer: the pinned priority
// group delivers to one of them at a time, so order per conversation holds
// across replicas too.
func TestOrderingAcrossTwoReplicas(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	const convs, turns = 100, 10
	var mu sync.Mutex
	last := map[string]int{}
	var active sync.Map
	var violations, handled atomic.Int64
	handler := func(_ context.Context, d streams.Decoded) error {
		if _, busy := active.LoadOrStore(d.Meta.Conversation, true); busy {
			violations.Add(1)
		}
		defer active.Delete(d.Meta.Conversation)
		mu.Lock()
		if d.Meta.Turn != last[d.Meta.Conversation]+1 {
			violations.Add(1)
		}
		last[d.Meta.Conversation] = d.Meta.Turn
		mu.Unlock()
		handled.Add(1)
		return nil
	}
	owner := map[string]int{} // conversation → replica that handled it
	handlerOf := func(replica int) consume.Handler {
		return func(ctx context.Context, d streams.Decoded) error {
			mu.Lock()
			if o, ok := owner[d.Meta.Conversation]; ok && o != replica {
				violations.Add(1) // a conversation split across replicas
			}
			owner[d.Meta.Conversation] = replica
			mu.Unlock()
			return handler(ctx, d)
		}
	}
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "replicated", Filter: []string{bus.UserTurnsAll}, MaxInFlight: 4}
	bustest.RunConsumer(t, h, cfg, nil, handlerOf(1))
	bustest.RunConsumer(t, h, cfg, nil, handlerOf(2))
	var outs []streams.Out
	for turn := 1; turn <= turns; turn++ {
		for c := 0; c < convs; c++ {
			outs = append(outs, *bustest.TurnEvent(t, "acme", fmt.Sprintf("r%d", c), turn, "x"))
		}
	}
	bustest.PublishTurns(t, h, outs)
	rtest.CheckFor(t, time.Minute, "all turns handled", func() bool { return handled.Load() == convs*turns })
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d ordering violations across two replicas", v)
	}
}
