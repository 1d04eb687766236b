package consume_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

// The server stores a partitioned stream's messages under their subject
// and a partition token computed from tenant and conversation: every
// message of one conversation in one partition, the conversations spread
// over all of them; readers find them by the published subject.
func TestPartitionedStreamStoresTheConversationsPartition(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	bustest.Partitioned(t, h, 4)
	var outs []streams.Out
	for c := range 40 {
		for turn := 1; turn <= 2; turn++ {
			outs = append(outs, *bustest.TurnEvent(t, "acme", fmt.Sprintf("c%02d", c), turn, "hello"))
		}
	}
	bustest.PublishTurns(t, h, outs)
	s, err := h.JS.Stream(t.Context(), bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	if n := streams.StreamPartitions(s.CachedInfo().Config); n != 4 {
		t.Fatalf("StreamPartitions = %d, want 4", n)
	}
	byConv := map[string]string{}
	used := map[string]bool{}
	err = streams.ReadStream(t.Context(), h.JS, bus.StreamTurns, streams.ReadOptions{}, func(r streams.Raw) error {
		tokens := strings.Split(r.Subject, ".")
		if len(tokens) != 6 {
			return fmt.Errorf("stored subject %s: want rein.turns.<tenant>.<conv>.<role>.<partition>", r.Subject)
		}
		p := tokens[5]
		if prev, ok := byConv[tokens[3]]; ok && prev != p {
			return fmt.Errorf("conversation %s in partitions %s and %s", tokens[3], prev, p)
		}
		byConv[tokens[3]], used[p] = p, true
		if got, want := streams.Unpartitioned(r.Subject), bus.TurnSubject("acme", tokens[3], schemas.RoleUser); got != want {
			return fmt.Errorf("Unpartitioned(%s) = %s, want %s", r.Subject, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) != 4 {
		t.Fatalf("40 conversations used partitions %v, want all 4", used)
	}
	turn, found, err := streams.LastTurn(t.Context(), s, bus.TurnSubject("acme", "c07", schemas.RoleUser))
	if err != nil || !found || turn != 2 {
		t.Fatalf("LastTurn through the partition token = %d, %v, %v; want 2", turn, found, err)
	}
	// A publisher may not choose the partition: the stream takes the
	// published form only.
	forged := bustest.TurnEvent(t, "acme", "c07", 3, "forged")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second) // no stream answers: the publisher would retry
	defer cancel()
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(ctx, forged.Stream, forged.Subject+".0", forged.Event); err == nil {
		t.Errorf("a turn published with a partition token of its own was stored")
	}
}

// Partitions are fixed once a stream holds messages: another count is a
// clear error (conversations would move between partitions with turns in
// flight), and a process started without the setting keeps them.
func TestProvisionNeverRepartitionsAStreamHoldingMessages(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	bustest.Partitioned(t, h, 4)
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "c1", 1, "hello")})
	p := natsserver.DefaultProvision()
	p.Partitions = 8
	err := natsserver.Provision(t.Context(), h.JS, p, nil)
	if !errors.Is(err, streams.ErrInvalidConfig) || !strings.Contains(err.Error(), "4 partitions") {
		t.Fatalf("repartitioning a stream holding messages: err = %v, want ErrInvalidConfig naming its 4 partitions", err)
	}
	if err := natsserver.Provision(t.Context(), h.JS, natsserver.DefaultProvision(), nil); err != nil {
		t.Fatalf("a process without streams.partitions: %v", err)
	}
	s, err := h.JS.Stream(t.Context(), bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	if n := streams.StreamPartitions(s.CachedInfo().Config); n != 4 {
		t.Fatalf("after a provision without partitions the stream has %d, want its 4 kept", n)
	}
	if got := s.CachedInfo().Config.Subjects; len(got) != 1 || got[0] != "rein.turns.*.*.*" {
		t.Fatalf("after a provision without partitions the stream takes %v, want the published form only", got)
	}
}

// Two replicas of a stage on a partitioned stream share the partitions and
// both work at once; every turn is handled once, in its conversation's
// order; when one replica stops, the other takes every partition and the
// turns published after go on.
func TestPartitionedReplicasShareTheWorkAndTakeOverOnStop(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	bustest.Partitioned(t, h, 4)
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "parts",
		Filter: []string{bus.UserTurnsAll}, AckWait: 30 * time.Second}
	log := newTurnLog()
	replica := func(name string) (stop func(), reg *prometheus.Registry) {
		reg = prometheus.NewRegistry()
		return bustest.RunConsumer(t, h, cfg, reg, log.handler(name)), reg
	}
	partitionsOf := func(reg *prometheus.Registry) float64 { return gaugeValue(reg, "rein_stage_partitions") }
	_, regA := replica("a")
	stopB, regB := replica("b")
	rtest.CheckFor(t, 30*time.Second, "two replicas with two partitions each", func() bool {
		return partitionsOf(regA) == 2 && partitionsOf(regB) == 2
	})
	owners, err := consume.PartitionOwners(t.Context(), h.JS, "test", 4)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]int{}
	for _, m := range owners {
		distinct[m.ID]++
	}
	if len(owners) != 4 || len(distinct) != 2 || distinct[owners[0].ID] != 2 {
		t.Errorf("PartitionOwners = %v; want the 4 partitions split 2 and 2 between the replicas", owners)
	}
	publish := func(from, to int) {
		var outs []streams.Out
		for turn := from; turn <= to; turn++ {
			for c := range 40 {
				outs = append(outs, *bustest.TurnEvent(t, "acme", fmt.Sprintf("c%02d", c), turn, "hello"))
			}
		}
		bustest.PublishTurns(t, h, outs)
	}
	publish(1, 3)
	rtest.CheckFor(t, 30*time.Second, "every turn handled", log.atLeast(40*3))
	if a, b := log.conversationsOf("a"), log.conversationsOf("b"); a == 0 || b == 0 {
		t.Errorf("conversations handled by a: %d, by b: %d; want both replicas working", a, b)
	}

	stopB()
	rtest.CheckFor(t, 30*time.Second, "the remaining replica works every partition", func() bool { return partitionsOf(regA) == 4 })
	publish(4, 5)
	rtest.CheckFor(t, 30*time.Second, "every turn handled after the stop", log.atLeast(40*5))
	log.checkInOrder(t, 5)
}

// A replica of a partitioned stage that dies without a word (its
// connection cut: no leave, no drain, no unpin) while turns flow: the other
// takes its partitions once its member key lapses and its pins expire, and
// every partition makes progress again (the time it took is logged).
func TestPartitionedReplicaCrashIsTakenOverWithinSeconds(t *testing.T) {
	t.Run("settled", func(t *testing.T) { partitionedCrash(t, false) })
	// The crash right after the replica handed half its partitions over.
	t.Run("right after a hand-over", func(t *testing.T) { partitionedCrash(t, true) })
}

func partitionedCrash(t *testing.T, early bool) {
	h := rtest.StartJetStream(t, "")
	bustest.Partitioned(t, h, 4)
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "parts",
		Filter: []string{bus.UserTurnsAll}, AckWait: 3 * time.Second}
	log := newTurnLog()
	replica := func(name string) (crash func(), reg *prometheus.Registry) {
		reg = prometheus.NewRegistry()
		return crashableReplica(t, h, cfg, reg, log.handler(name)), reg
	}
	crashA, regA := replica("a")
	var regB *prometheus.Registry
	if !early {
		_, regB = replica("b")
		rtest.CheckFor(t, 30*time.Second, "two replicas with two partitions each", func() bool {
			return gaugeValue(regA, "rein_stage_partitions") == 2 && gaugeValue(regB, "rein_stage_partitions") == 2
		})
	}
	const convs, turns = 40, 6
	// Published at a pace, so that turns still arrive when A dies.
	var outs []streams.Out
	for turn := 1; turn <= turns; turn++ {
		for c := range convs {
			outs = append(outs, *bustest.TurnEvent(t, "acme", fmt.Sprintf("c%02d", c), turn, "hello"))
		}
	}
	published := make(chan error, 1)
	go func() {
		pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
		for _, o := range outs {
			if _, err := pub.Publish(t.Context(), o.Stream, o.Subject, o.Event); err != nil {
				published <- err
				return
			}
			select {
			case <-t.Context().Done():
				published <- t.Context().Err()
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		published <- nil
	}()
	rtest.CheckFor(t, 30*time.Second, "a third handled", log.atLeast(convs*turns/3))
	if early {
		_, regB = replica("b")
		rtest.CheckFor(t, 30*time.Second, "a hands two partitions over", func() bool { return gaugeValue(regA, "rein_stage_partitions") == 2 })
	}
	crashA()
	crashed := time.Now()
	if err := <-published; err != nil {
		t.Fatalf("publish: %v", err)
	}
	// The 60 s deadlines only guard against a hang (member TTL 6 s, pin TTL
	// 10 s); how long the take-over takes is logged, not asserted.
	rtest.CheckFor(t, 60*time.Second, "b works every partition after a's crash (hung?)", func() bool { return gaugeValue(regB, "rein_stage_partitions") == 4 })
	rtest.CheckFor(t, 60*time.Second, "every turn handled after the crash (hung?)", log.atLeast(convs*turns))
	t.Logf("every turn handled %s after the crash", time.Since(crashed).Round(100*time.Millisecond))
	log.checkInOrder(t, turns)
}

// turnLog records the turns a test's replicas handle.
type turnLog struct {
	mu      sync.Mutex
	handled map[string][]int           // conversation → turns, in handling order
	by      map[string]map[string]bool // replica → conversations it handled
}

func newTurnLog() *turnLog {
	return &turnLog{handled: map[string][]int{}, by: map[string]map[string]bool{}}
}

// handler records each turn as handled by replica.
func (l *turnLog) handler(replica string) consume.Handler {
	return func(_ context.Context, d streams.Decoded) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		c := d.Meta.Conversation
		l.handled[c] = append(l.handled[c], d.Meta.Turn)
		if l.by[replica] == nil {
			l.by[replica] = map[string]bool{}
		}
		l.by[replica][c] = true
		return nil
	}
}

// atLeast polls for n handlings in all.
func (l *turnLog) atLeast(n int) func() bool {
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		got := 0
		for _, ts := range l.handled {
			got += len(ts)
		}
		return got >= n
	}
}

func (l *turnLog) conversationsOf(replica string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.by[replica])
}

// checkInOrder fails unless every conversation's turns 1..turns were each
// handled once, in order.
func (l *turnLog) checkInOrder(t *testing.T, turns int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c, ts := range l.handled {
		ok := len(ts) == turns
		for i, turn := range ts {
			ok = ok && turn == i+1
		}
		if !ok {
			t.Errorf("conversation %s handled turns %v, want 1..%d once each, in order", c, ts, turns)
		}
	}
}

// gaugeValue is the value of a gauge with one series in reg (-1 if none).
func gaugeValue(reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// testLogger is quiet unless REIN_TEST_LOG is set (then info to stderr).
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("REIN_TEST_LOG") == "" {
		return bustest.Quiet
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("test", t.Name())
}

// crashableReplica starts a replica of cfg's stage on a connection of its
// own and returns what crashes it: closing the socket, so that Run never
// unpins, drains or leaves.
func crashableReplica(t *testing.T, h *rtest.JS, cfg consume.ConsumerConfig, reg prometheus.Registerer, fn consume.Handler) (crash func()) {
	t.Helper()
	nc, js := h.ConnectAs(t, natsserver.IdentityAdmin, nil)
	c, err := consume.NewConsumer(cfg, consume.ConsumerDeps{JS: js, Publisher: streams.NewPublisher(js, nil, streams.PublisherConfig{}), Logger: testLogger(t), Registerer: reg}, fn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = c.Run(ctx) }()
	return nc.Close
}

func TestParsePartitionDurable(t *testing.T) {
	for _, tc := range []struct {
		name, stage string
		p           int
		ok          bool
	}{
		{"detector-p3", bus.StageDetector, 3, true},
		{"agentworker-p12", bus.StageAgentWorker, 12, true},
		{"injector-p0", bus.StageInjector, 0, true},
		{"detector", "", 0, false},
		{"detector-p03", "", 0, false},
		{"detector-p-1", "", 0, false},
		{"escalation-p1", "", 0, false}, // not partitioned
		{"reader-p1", "", 0, false},
	} {
		stage, p, ok := consume.ParsePartitionDurable(tc.name)
		if stage != tc.stage || p != tc.p || ok != tc.ok {
			t.Errorf("ParsePartitionDurable(%q) = %q, %d, %v; want %q, %d, %v", tc.name, stage, p, ok, tc.stage, tc.p, tc.ok)
		}
	}
}

// Provisioning deletes the injector's durable, retired since the detector
// stores each detection's task, and its partitions' (a deployment upgraded
// from one that ran the injector as its own consumer); other consumers of
// the stream stay.
func TestProvisionDeletesTheRetiredInjectorDurable(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	for _, name := range []string{bus.DurableInjector, streams.PartitionDurable(bus.DurableInjector, 1), "audit"} {
		if _, err := h.JS.CreateOrUpdateConsumer(ctx, bus.StreamDetections, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	if err := natsserver.Provision(ctx, h.JS, natsserver.DefaultProvision(), nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{bus.DurableInjector: false, streams.PartitionDurable(bus.DurableInjector, 1): false, "audit": true} {
		_, err := h.JS.Consumer(ctx, bus.StreamDetections, name)
		if got := err == nil; got != want {
			t.Errorf("consumer %s exists: %v (%v), want %v", name, got, err, want)
		}
	}
	// Nothing to delete the second time.
	if err := natsserver.Provision(ctx, h.JS, natsserver.DefaultProvision(), nil); err != nil {
		t.Fatal(err)
	}
}
