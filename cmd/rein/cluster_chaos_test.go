package main

import (
	"context"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
)

// Two rein serve processes (every stage in each, so two replicas of every
// stage) on a 3-node cluster with R3 streams; the node leading REIN_TURNS
// is stopped a third of the way through publishing and started again at
// two thirds. Every user turn must still end with exactly one detection,
// one task and one reply, none duplicated, in order per conversation.
// REIN_CLUSTER_LONG=1 runs 2,000 turns over 200 conversations.
//
// It runs only with REIN_CLUSTER_CHAOS=1: it does not pass reliably yet.
// It first failed in 1 of 5 runs without the race detector and 3 of 4 with
// it: 2 to 6 turns of one conversation with a task but no reply, the
// pipeline never quiet. Three causes were found and fixed: a publish whose
// acknowledgement was lost in the leader change waited forever (the
// handler without a deadline, the conversation queued behind it: the
// Publisher now bounds each attempt); every process generated its own task
// key, so a replica's agent worker refused the other's tasks after a
// fail-over (a shared --task-key is now required on an external NATS); and
// this test's own read failed on a restarted node. Since: 6 of 6 runs
// without -race and 8 of 9 with it passed. The one failure lost nothing:
// a turn ended with an explicit unanswered (superseded) record, because
// the order gate's hold (3 × the 3 s ack wait) expired under -race and a
// later turn ran first. The gate waits there although the other replica
// had decided the earlier message: it sees only the ack floor and its own
// process's decisions.
func TestClusterNodeLossKeepsOneOutcomePerTurn(t *testing.T) {
	if os.Getenv("REIN_CLUSTER_CHAOS") == "" {
		t.Skip("set REIN_CLUSTER_CHAOS=1: not yet reliable (see the comment)")
	}
	cfg := chaosConfig{turns: 200, convs: 20, latency: 50 * time.Millisecond, rate: 100, settle: 3 * time.Minute,
		seed: uint64(time.Now().UnixNano())}
	if os.Getenv("REIN_CLUSTER_LONG") != "" {
		cfg.turns, cfg.convs, cfg.rate = 2000, 200, 200
	}
	t.Logf("cluster chaos: seed %d, %d turns over %d conversations", cfg.seed, cfg.turns, cfg.convs)
	c := rtest.StartCluster(t, 3)
	c.WaitMetaLeader(30 * time.Second)
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(script, []byte(krAgentScript(cfg.latency)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every replica signs and checks tasks with one shared key.
	taskKey := filepath.Join(dir, "task-key")
	if err := os.WriteFile(taskKey, []byte(strings.Repeat("k", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var done []chan error
	for i := range 2 {
		httpAddr := freePort(t)
		ch := make(chan error, 1)
		done = append(done, ch)
		go func() {
			_, err := runCLI(t, ctx, "serve", "--nats-url", c.URLs(), "--stream-replicas", "3", "--kv-replicas", "3",
				"--agent-script", script, "--ack-wait", "3s", "--task-key", taskKey, "--data-dir", filepath.Join(dir, "serve", string(rune('a'+i))),
				"--http", httpAddr, "--log-level", "error")
			ch <- err
		}()
		rtest.CheckFor(t, 2*time.Minute, "serve ready", func() bool {
			select {
			case err := <-ch:
				t.Fatalf("serve %d exited: %v", i, err)
			default:
			}
			resp, err := http.Get("http://" + httpAddr + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	defer func() {
		cancel()
		for _, ch := range done {
			select {
			case <-ch:
			case <-time.After(60 * time.Second):
				t.Error("serve did not stop within 60s")
			}
		}
	}()

	_, js := c.Connect(t, t.Name())
	plan := chaosPlan(cfg, rand.New(rand.NewPCG(cfg.seed, 0x636c7573)))
	var published atomic.Int64
	pubDone := make(chan error, 1)
	go func() { pubDone <- chaosPublish(ctx, js, plan, cfg.rate, &published) }()
	rtest.CheckFor(t, 5*time.Minute, "a third published", func() bool { return published.Load() >= int64(len(plan)/3) })
	leader := c.StreamLeader(streams.StreamTurns)
	if leader < 0 {
		t.Fatal("REIN_TURNS has no leader")
	}
	c.Stop(leader)
	t.Logf("cluster chaos: stopped %s (REIN_TURNS leader) after %d turns", c.Nodes[leader].Name, published.Load())
	rtest.CheckFor(t, 5*time.Minute, "two thirds published", func() bool { return published.Load() >= int64(2*len(plan)/3) })
	c.Start(leader)
	t.Logf("cluster chaos: started %s again after %d turns", c.Nodes[leader].Name, published.Load())
	if err := <-pubDone; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	if !chaosSettle(js, cfg.settle) {
		t.Errorf("the pipeline did not settle within %s; checking what is there", cfg.settle)
	}
	res := chaosCheck(t, js, plan)
	t.Logf("cluster chaos: replies %d, detections %d, tasks %d, escalations %d, reports %d, dead letters %d",
		res.replies, res.detections, res.tasks, res.escalations, res.reports, res.dlq)
}
