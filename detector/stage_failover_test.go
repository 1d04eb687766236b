package detector_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// A replica dies holding conversation x's turn unacked, after it judged
// and acked conversation a's turn 1. The standby gets a's turn 2 at once,
// but the consumer's ack floor stays below a1 until x1 comes back after
// AckWait (30 s here). The order gate must see that a1's detection is
// stored and judge a2 now, not after AckWait (or its MaxHold).
func TestStandbyJudgesATurnWhosePredecessorTheDeadReplicaJudged(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	publishTurn(t, h, "x", "user", 1, "hello")
	publishTurn(t, h, "a", "user", 1, "cancel my reservation")

	st, m := newJudging(t, h, detector.Deps{}, 0)
	cc := st.ConsumerConfig().ConsumerConfigJS()
	cons, err := h.JS.CreateOrUpdateConsumer(ctx, bus.StreamTurns, cc)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(2, jetstream.FetchPriorityGroup(cc.PriorityGroups[0]), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		if !strings.Contains(msg.Subject(), ".a.") {
			continue // x1: never acked, the replica dies
		}
		storeDecided(t, h, "a", 1, "")
		if err := msg.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s, err := h.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UnpinConsumer(ctx, cc.Durable, cc.PriorityGroups[0]); err != nil {
		t.Fatal(err)
	}
	publishTurn(t, h, "a", "user", 2, "the one to Boston")

	rtest.Run(t, "stage", st.Run)
	rtest.CheckFor(t, 10*time.Second, "a's turn 2 judged well before x1's redelivery", func() bool {
		_, ok := detections(t, h)[schemas.EventID("detection", "acme", "a", 2)]
		return ok
	})
	if n := judgedTurns(m); n != 1 {
		t.Errorf("the module judged %d turns, want a2 alone (x1 comes back after AckWait)", n)
	}
}

// A replica dies after storing a1's detection but before its task (and
// before acking a1). a1 is not settled: the standby must not run a2 first,
// or a2's task would be stored before a1's. (The gate's hook once looked
// at the detection alone.)
func TestATurnWithoutItsTaskIsNotSettled(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	publishTurn(t, h, "a", "user", 1, "cancel my reservation")
	m := &fakeModule{answer: func(context.Context, inception.Input) (inception.Decision, error) { return inception.Decision{}, nil }}
	st, err := detector.New(detector.Config{TaxonomyVersion: "test-1", Timeout: time.Second, AckWait: 2 * time.Second}, detector.Deps{
		StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()},
		Module:    m,
		Tools:     func(string) ([]llm.Tool, error) { return []llm.Tool{{Name: "cancel_reservation"}}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	// The dead replica: a1 delivered, its detection stored, no task, no ack.
	h.DeliverAbandoned(t, bus.StreamTurns, st.ConsumerConfig().ConsumerConfigJS(), 1)
	storeDetection(t, h, "a", 1, "")
	publishTurn(t, h, "a", "user", 2, "the one to Boston")

	rtest.Run(t, "stage", st.Run)
	rtest.CheckFor(t, 30*time.Second, "both tasks stored", func() bool { return len(storedTasks(t, h)) == 2 })
	if got := storedTasks(t, h); got[0].Turn != 1 || got[1].Turn != 2 {
		t.Fatalf("tasks stored for turns %d then %d; a1's must come first", got[0].Turn, got[1].Turn)
	}
}

// A later turn whose outputs are stored does not prove that an earlier
// one's are. When a2 ran before a1 was decided (the order gate gave up
// waiting: MaxHold), a1 comes back with nothing of its own stored, while
// its conversation's last detection and last task are a2's. a1 must still
// get its detection and its task (the agent worker then ends it with an
// explicit superseded record), never be acked as handled with neither.
func TestATurnOvertakenByALaterOneStillGetsItsOutputs(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	publishTurn(t, h, "a", "user", 1, "cancel my reservation")
	publishTurn(t, h, "a", "user", 2, "the one to Boston")
	inj, err := injector.NewTasks(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, m := newJudging(t, h, detector.Deps{}, time.Hour)
	// Both turns were delivered before; a2's outputs are stored, a1 has none.
	h.DeliverUnacked(t, bus.StreamTurns, st.ConsumerConfig().ConsumerConfigJS(), 2)
	storeDetection(t, h, "a", 2, "")
	task, _, err := inj.Task(schemas.Meta{Tenant: "acme", Conversation: "a", Turn: 2}, schemas.Detection{Turn: 2, UserText: "the one to Boston"},
		schemas.EventID("detection", "acme", "a", 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).PublishAll(context.Background(), task); err != nil {
		t.Fatal(err)
	}

	rtest.Run(t, "stage", st.Run)
	h.WaitAcked(t, 10*time.Second, bus.StreamTurns, bus.DurableDetector, 2)
	if _, ok := detections(t, h)[schemas.EventID("detection", "acme", "a", 1)]; !ok {
		t.Errorf("a1 acked without its detection (the module judged %d turns)", judgedTurns(m))
	}
	var turns []int
	for _, task := range storedTasks(t, h) {
		turns = append(turns, task.Turn)
	}
	if !slices.Equal(turns, []int{2, 1}) {
		t.Errorf("tasks stored for turns %v, want a2's then a1's", turns)
	}
}
