package natsserver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// clusterLong runs the cluster tests at their long size
// (REIN_CLUSTER_LONG=1); CI runs the short one.
func clusterLong() bool { return os.Getenv("REIN_CLUSTER_LONG") != "" }

func r3() natsserver.ProvisionConfig {
	p := natsserver.DefaultProvision()
	p.Override(3, 3, []string{rtest.ClusterTag})
	return p
}

func provision(t *testing.T, js jetstream.JetStream, p natsserver.ProvisionConfig, log *slog.Logger) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	return natsserver.Provision(ctx, js, p, log)
}

// replicas returns a stream's configured replicas and its leader.
func replicas(t *testing.T, js jetstream.JetStream, name string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info := s.CachedInfo()
	leader := ""
	if info.Cluster != nil {
		leader = info.Cluster.Leader
	}
	return info.Config.Replicas, leader
}

// R3 on a 3-node cluster: every stream and the bucket get three replicas,
// placed by tag, each with a leader.
func TestClusterProvisionsR3(t *testing.T) {
	c := rtest.StartCluster(t, 3)
	c.WaitMetaLeader(30 * time.Second)
	_, js := c.Connect(t, t.Name())
	if err := provision(t, js, r3(), nil); err != nil {
		t.Fatalf("provision R3: %v", err)
	}
	for _, name := range append(append([]string{}, natsserver.StreamNames...), bus.StreamConversations) {
		n, leader := replicas(t, js, name)
		if n != 3 || leader == "" {
			t.Errorf("%s: %d replicas, leader %q; want 3 and a leader", name, n, leader)
		}
	}
	s, err := js.Stream(t.Context(), bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.CachedInfo().Config.Placement; p == nil || len(p.Tags) != 1 || p.Tags[0] != rtest.ClusterTag {
		t.Errorf("placement %+v, want tags [%s]", p, rtest.ClusterTag)
	}
}

// A process started without the replication settings (R1, as every
// process used to re-apply) keeps the streams at R3 and says so.
func TestClusterNeverLowersReplicas(t *testing.T) {
	c := rtest.StartCluster(t, 3)
	c.WaitMetaLeader(30 * time.Second)
	_, js := c.Connect(t, t.Name())
	if err := provision(t, js, r3(), nil); err != nil {
		t.Fatalf("provision R3: %v", err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if err := provision(t, js, natsserver.DefaultProvision(), log); err != nil {
		t.Fatalf("provision R1 over R3: %v", err)
	}
	for _, name := range []string{bus.StreamTurns, bus.StreamOutcomes, bus.StreamConversations} {
		if n, _ := replicas(t, js, name); n != 3 {
			t.Errorf("%s lowered to %d replicas", name, n)
		}
	}
	if !strings.Contains(logs.String(), "never lowers") || !strings.Contains(logs.String(), bus.StreamTurns) {
		t.Errorf("no warning about the kept replicas in the log:\n%s", logs.String())
	}
	s, err := js.Stream(t.Context(), bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.CachedInfo().Config.Placement; p == nil || len(p.Tags) == 0 {
		t.Errorf("placement dropped by a process that gave none: %+v", p)
	}
}

// R3 asked of a single server is a clear error naming the fix, not a
// stream quietly left at R1.
func TestSingleServerRefusesReplicas(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	p := natsserver.DefaultProvision()
	p.Override(3, 0, nil)
	err := provision(t, h.JS, p, nil)
	if !errors.Is(err, streams.ErrReplicasUnavailable) || !strings.Contains(err.Error(), "--stream-replicas 1") {
		t.Fatalf("err = %v, want ErrReplicasUnavailable naming --stream-replicas 1", err)
	}
	if n, _ := replicas(t, h.JS, bus.StreamTurns); n != 1 {
		t.Fatalf("REIN_TURNS has %d replicas", n)
	}
}

// Several processes provisioning at once on a cluster that has just
// started (no meta leader yet), then creating their stages' consumers
// (two processes per consumer), all succeed.
func TestClusterConcurrentProvision(t *testing.T) {
	c := rtest.StartCluster(t, 3)
	const procs = 4
	var wg sync.WaitGroup
	errs := make([]error, procs)
	for i := range procs {
		// Each process has its own connection, to a different node.
		_, js := c.Connect(t, fmt.Sprintf("%s-%d", t.Name(), i))
		wg.Go(func() {
			if errs[i] = provision(t, js, r3(), nil); errs[i] != nil {
				return
			}
			// Then its stage's durable consumer, as a starting stage does.
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			_, errs[i] = streams.EnsureConsumer(ctx, js, bus.StreamTurns, jetstream.ConsumerConfig{
				Durable: "stage" + strconv.Itoa(i%2), AckPolicy: jetstream.AckExplicitPolicy}, bustest.Quiet)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
	_, js := c.Connect(t, t.Name())
	for _, name := range natsserver.StreamNames {
		if n, _ := replicas(t, js, name); n != 3 {
			t.Errorf("%s: %d replicas after concurrent provisioning", name, n)
		}
	}
}

// Turns published while the node leading REIN_TURNS is down, and after
// it returns, are all stored once: nothing lost, nothing duplicated.
func TestClusterNodeLossLosesNothing(t *testing.T) {
	total := 300
	if clusterLong() {
		total = 20000
	}
	c := rtest.StartCluster(t, 3)
	c.WaitMetaLeader(30 * time.Second)
	_, js := c.Connect(t, t.Name())
	if err := provision(t, js, r3(), nil); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			msg := &nats.Msg{Subject: bus.TurnSubject("acme", "c"+strconv.Itoa(i%50), "user"),
				Header: nats.Header{}, Data: []byte(strconv.Itoa(i))}
			msg.Header.Set(bus.HeaderMsgID, "turn-"+strconv.Itoa(i))
			// Through a leader election a publish may time out or find no
			// leader: retry it, as rein's publisher does; Msg-Id keeps a
			// retried publish that did land from being stored twice.
			deadline := time.Now().Add(30 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				_, err := js.PublishMsg(ctx, msg)
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("publish %d: %v", i, err)
				}
			}
		}
	}
	publish(0, total/3)
	leader := c.StreamLeader(bus.StreamTurns)
	if leader < 0 {
		t.Fatal("REIN_TURNS has no leader")
	}
	c.Stop(leader)
	publish(total/3, 2*total/3)
	c.Start(leader)
	publish(2*total/3, total)
	c.WaitStreamCurrent(60*time.Second, bus.StreamTurns)

	s, err := js.Stream(t.Context(), bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(total) {
		t.Fatalf("REIN_TURNS holds %d messages, want %d", info.State.Msgs, total)
	}
	// Every turn once: read them all back, by sequence.
	seen := make([]bool, total)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		var m *jetstream.RawStreamMsg
		rtest.CheckFor(t, 10*time.Second, fmt.Sprintf("read message %d", seq), func() bool {
			m, err = s.GetMsg(t.Context(), seq)
			return err == nil || errors.Is(err, jetstream.ErrMsgNotFound)
		})
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		i, err := strconv.Atoi(string(m.Data))
		if err != nil || i < 0 || i >= total || seen[i] {
			t.Fatalf("unexpected or duplicated turn %q at %d", m.Data, seq)
		}
		seen[i] = true
	}
}
