package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// rein streams on a 3-node cluster shows each stream's replicas and
// leader; with the meta leader's majority gone it answers within its
// timeout, saying what is unavailable, instead of hanging.
func TestStreamsOnCluster(t *testing.T) {
	t.Parallel()
	c := rtest.StartCluster(t, 3)
	c.WaitMetaLeader(30 * time.Second)
	_, js := c.Connect(t, t.Name())
	p := natsserver.DefaultProvision()
	p.Override(3, 3, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := natsserver.Provision(ctx, js, p, nil); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, t.Context(), "streams", "--json", "--nats-url", c.URLs())
	if err != nil {
		t.Fatalf("streams: %v\n%s", err, out)
	}
	var rows []streamReport
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rows) != len(natsserver.StreamNames)+1 || rows[len(rows)-1].Name != bus.StreamConversations {
		t.Fatalf("%d rows, want every stream and %s", len(rows), bus.StreamConversations)
	}
	for _, r := range rows {
		if r.Replicas != 3 || r.Leader == "" || len(r.Peers) != 2 || r.Error != "" {
			t.Errorf("%s: replicas %d, leader %q, peers %v, error %q", r.Name, r.Replicas, r.Leader, r.Peers, r.Error)
		}
	}
	text, err := runCLI(t, t.Context(), "streams", "--nats-url", c.URLs())
	if err != nil || !strings.Contains(text, "REPLICAS") || !strings.Contains(text, "LEADER") {
		t.Fatalf("table: %v\n%s", err, text)
	}

	// Two of three servers down: no meta leader, no stream leader.
	survivor := (c.MetaLeader() + 1) % 3
	for i := range c.Nodes {
		if i != survivor {
			c.Stop(i)
		}
	}
	// A stream leader may still answer for a moment after its peers are
	// gone (it steps down once it notices the lost quorum), so rein streams
	// is run until it reports the loss, within a deadline. Each run must
	// return on its own (--timeout): the guard only catches a hang.
	deadline := time.Now().Add(45 * time.Second)
	for {
		guard, stop := context.WithTimeout(t.Context(), 2*time.Minute)
		text, err = runCLI(t, guard, "streams", "--timeout", "500ms", "--nats-url", c.URLs())
		hung := guard.Err() != nil
		stop()
		if hung {
			t.Fatalf("streams hung without a meta leader: still running when the 2-minute hang guard ran out (err %v)\n%s", err, text)
		}
		if err != nil && strings.Contains(err.Error(), "unavailable") && strings.Contains(text, "UNAVAILABLE") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams without a meta leader, 45 s after two of three servers stopped: err %v\n%s", err, text)
		}
	}
}
