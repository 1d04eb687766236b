package testutil

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/localcluster"
	"github.com/reinception/rein/streams/natsserver"
)

// ClusterTag is the server tag every node of a test cluster carries, for
// placement tests.
const ClusterTag = localcluster.Tag

// Cluster is a localcluster.Cluster bound to a test: its helpers fail the
// test instead of returning errors, and it is shut down when the test
// ends.
type Cluster struct {
	*localcluster.Cluster
	t testing.TB
}

// StartCluster starts an n-node JetStream cluster and waits until every
// node accepts clients. It does not wait for a meta leader (see
// WaitMetaLeader): tests of start-up races want the cluster fresh.
// Everything is shut down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := localcluster.Start(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	return &Cluster{Cluster: c, t: t}
}

// Start starts (or restarts) node i on its ports and storage.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	if err := c.StartNode(i); err != nil {
		c.t.Fatal(err)
	}
}

// Stop shuts node i down (its storage stays for Start).
func (c *Cluster) Stop(i int) { c.StopNode(i) }

// Connect opens a client connection to the cluster (all nodes' URLs,
// reconnecting forever), closed when the test ends.
func (c *Cluster) Connect(t testing.TB, name string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: c.URLs(), Name: name})
	if err != nil {
		t.Fatalf("connect to cluster: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// WaitMetaLeader polls until one running node is the JetStream meta
// leader and every running node is current with it.
func (c *Cluster) WaitMetaLeader(within time.Duration) {
	c.t.Helper()
	CheckFor(c.t, within, "cluster elects a JetStream meta leader", c.MetaReady)
}

// WaitStreamCurrent polls until the stream has a leader and every running
// node holding a replica is current with it.
func (c *Cluster) WaitStreamCurrent(within time.Duration, stream string) {
	c.t.Helper()
	CheckFor(c.t, within, stream+" has a leader and current replicas", func() bool { return c.StreamCurrent(stream) })
}
