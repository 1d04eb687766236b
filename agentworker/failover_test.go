package agentworker_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// A replica dies holding conversation x's task unacked, after it answered
// and acked conversation a's turn 1. The consumer's ack floor stays below
// x1 until the server redelivers it, an ack wait later (two minutes here).
// The standby receives a's turn 2 at once; its order gate must see that a1
// is answered, every output stored, and run a2 now, not after x1 comes
// back. Without the stage's Stored answer it held every such conversation
// for the whole ack wait.
func TestStandbyAnswersATurnWhosePredecessorTheDeadReplicaAnswered(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	cfg := agentworker.Config{AckWait: 2 * time.Minute, SystemPrompt: prompt}
	deps := agentworker.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: quiet()}, Model: scripted(t)}
	probe, err := agentworker.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	publishTask(t, h, "x", 1, "show reservation Q7RM2K", nil)
	publishTask(t, h, "a", 1, "show reservation Q7RM2K", nil)
	// The dying replica takes x1 and never acks it.
	h.DeliverAbandoned(t, bus.StreamTasks, probe.ConsumerConfig().ConsumerConfigJS(), 1)

	// It answers a1 and acks it, then is gone.
	_, stop := startWorker(t, h, cfg, agentworker.Deps{Model: scripted(t)})
	rtest.CheckFor(t, wait, "a1 answered", func() bool { return len(agentTurns(t, h, "a")) == 1 })
	rtest.CheckFor(t, wait, "a1 acked", func() bool { return taskAcked(t, h, 2) })
	stop()

	publishTask(t, h, "a", 2, "show reservation Q7RM2K", nil)
	startWorker(t, h, cfg, agentworker.Deps{Model: scripted(t)})
	rtest.CheckFor(t, 30*time.Second, "a2 answered before x1 comes back", func() bool { return len(agentTurns(t, h, "a")) == 2 })
	if n := len(agentTurns(t, h, "x")); n != 0 {
		t.Fatalf("x1 was answered (%d replies) before a2: the test did not keep it out for the ack wait", n)
	}
}

// taskAcked tells whether the agent worker's durable has acked the task
// at stream sequence seq.
func taskAcked(t *testing.T, h *rtest.JS, seq uint64) bool {
	t.Helper()
	c, err := h.JS.Consumer(context.Background(), bus.StreamTasks, bus.DurableAgentWorker)
	if err != nil {
		return false
	}
	info, err := c.Info(context.Background())
	if err != nil {
		return false
	}
	return info.NumAckPending == 1 && info.Delivered.Stream >= seq // x1 alone is out
}

// The other side: a replica that stored a1's state as finished but died
// before a1's reply was stored. a1 is not settled, and the standby must
// hold a2 (until a1 comes back), or a2's reply would be stored before a1's.
// A hook that trusted the state alone would run a2 at once.
func TestStandbyHoldsATurnWhosePredecessorsReplyIsNotStored(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	cfg := agentworker.Config{AckWait: 2 * time.Minute, SystemPrompt: prompt}
	nc, js1 := h.ConnectAs(t, natsserver.IdentityAdmin, nil)
	down := &outageJS{JetStream: js1, prefix: bus.TurnSubject(tenant, "a", "agent")}
	down.down.Store(true)
	dying, err := agentworker.New(cfg, agentworker.Deps{StageDeps: streams.StageDeps{JS: down, Publisher: streams.NewPublisher(down, nil, streams.PublisherConfig{}), Logger: quiet()}, Model: scripted(t)})
	if err != nil {
		t.Fatal(err)
	}
	publishTask(t, h, "a", 1, "show reservation Q7RM2K", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = dying.Run(ctx) }()
	rtest.CheckFor(t, wait, "a1's state stored as finished while its reply is not", func() bool {
		st, ok := storedState(t, h, "a")
		return ok && st.Turn == 1 && st.TurnDone && down.failed.Load() > 0
	})
	nc.Close() // the replica is gone: a1 stays unacked until the ack wait passes
	cancel()
	cc := dying.ConsumerConfig().ConsumerConfigJS()
	s, err := h.JS.Stream(context.Background(), bus.StreamTasks)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UnpinConsumer(context.Background(), cc.Durable, cc.PriorityGroups[0]); err != nil {
		t.Fatal(err)
	}

	publishTask(t, h, "a", 2, "show reservation Q7RM2K", nil)
	reg := prometheus.NewRegistry()
	startWorker(t, h, cfg, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: scripted(t)})
	rtest.CheckFor(t, wait, "a2 held by the order gate", func() bool {
		return counter(t, reg, "rein_stage_order_holds_total", map[string]string{"stage": bus.StageAgentWorker, "outcome": "held"}) > 0 ||
			len(agentTurns(t, h, "a")) > 0
	})
	if n := len(agentTurns(t, h, "a")); n != 0 {
		t.Fatalf("%d replies stored for a while a1's was not: a2 ran before a1", n)
	}
}
