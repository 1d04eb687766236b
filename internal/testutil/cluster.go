package testutil

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams"
)

// ClusterTag is the server tag every node of a test cluster carries, for
// placement tests.
const ClusterTag = "rein-test"

// Cluster is a JetStream cluster of embedded nats-servers in this process,
// on loopback: each node has its own client and route ports and its own
// store directory, and routes to every node, as a real cluster of
// separate machines would. Nodes can be stopped and started again on the
// same ports and storage.
type Cluster struct {
	t     testing.TB
	Name  string
	Nodes []*ClusterNode
}

// ClusterNode is one server of a Cluster; Server is nil while it is down.
type ClusterNode struct {
	Name        string
	Dir         string
	ClientPort  int
	ClusterPort int
	Server      *server.Server
	routes      string
	cluster     string
}

// StartCluster starts an n-node JetStream cluster and waits until every
// node accepts clients. It does not wait for a meta leader (see
// WaitMetaLeader): tests of start-up races want the cluster fresh.
// Everything is shut down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	// The ports are picked before the servers bind them, so another
	// process may take one in between; the cluster is then started again
	// on other ports.
	var err error
	for range 3 {
		var c *Cluster
		if c, err = tryCluster(t, n); err == nil {
			t.Cleanup(c.Shutdown)
			return c
		}
	}
	t.Fatalf("start a %d-node cluster: %v", n, err)
	return nil
}

func tryCluster(t testing.TB, n int) (*Cluster, error) {
	c := &Cluster{t: t, Name: "rein-test"}
	root := t.TempDir()
	var routes []string
	for i := range n {
		node := &ClusterNode{Name: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(root, fmt.Sprintf("n%d", i+1)),
			ClientPort: freePort(t), ClusterPort: freePort(t), cluster: c.Name}
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", node.ClusterPort))
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		node.routes = strings.Join(routes, ",")
	}
	for i := range c.Nodes {
		if err := c.start(i); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	return c, nil
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before the server binds it; the server then fails to start and
// the test says so.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (n *ClusterNode) options() *server.Options {
	return &server.Options{
		ServerName: n.Name,
		Host:       "127.0.0.1",
		Port:       n.ClientPort,
		JetStream:  true,
		StoreDir:   n.Dir,
		// A fixed budget per node: a test cluster must not claim the
		// machine's whole disk and memory as its resources.
		JetStreamMaxStore:  1 << 30,
		JetStreamMaxMemory: 256 << 20,
		NoSigs:             true,
		NoLog:              true,
		MaxPayload:         8 << 20,
		Tags:               []string{ClusterTag, "node:" + n.Name},
		Cluster:            server.ClusterOpts{Name: n.cluster, Host: "127.0.0.1", Port: n.ClusterPort},
		Routes:             server.RoutesFromStr(n.routes),
	}
}

// Start starts (or restarts) node i on its ports and storage.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	if err := c.start(i); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) start(i int) error {
	node := c.Nodes[i]
	if node.Server != nil {
		return fmt.Errorf("node %s is already running", node.Name)
	}
	s, err := server.NewServer(node.options())
	if err != nil {
		return fmt.Errorf("node %s: %w", node.Name, err)
	}
	go s.Start()
	// Generous: the machine may be busy with other builds and tests.
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return fmt.Errorf("node %s not ready for connections on port %d within 30s (port taken?)", node.Name, node.ClientPort)
	}
	node.Server = s
	return nil
}

// Stop shuts node i down (its storage stays for Start).
func (c *Cluster) Stop(i int) {
	node := c.Nodes[i]
	if node.Server == nil {
		return
	}
	node.Server.Shutdown()
	node.Server.WaitForShutdown()
	node.Server = nil
}

// Shutdown stops every node (idempotent).
func (c *Cluster) Shutdown() {
	for i := range c.Nodes {
		c.Stop(i)
	}
}

// URLs is the comma-separated client URLs of every node, for
// streams.ConnectConfig.URL.
func (c *Cluster) URLs() string {
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", n.ClientPort))
	}
	return strings.Join(urls, ",")
}

// Connect opens a client connection to the cluster (all nodes' URLs,
// reconnecting forever), closed when the test ends.
func (c *Cluster) Connect(t testing.TB, name string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := streams.Connect(streams.ConnectConfig{URL: c.URLs(), Name: name})
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
	CheckFor(c.t, within, "cluster elects a JetStream meta leader", func() bool {
		leader := false
		for _, n := range c.Nodes {
			if n.Server == nil {
				continue
			}
			if !n.Server.JetStreamIsCurrent() {
				return false
			}
			leader = leader || n.Server.JetStreamIsLeader()
		}
		return leader
	})
}

// StreamLeader is the index of the running node that leads the stream, or
// -1 when none does.
func (c *Cluster) StreamLeader(stream string) int {
	for i, n := range c.Nodes {
		if n.Server != nil && n.Server.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// MetaLeader is the index of the running meta leader, or -1.
func (c *Cluster) MetaLeader() int {
	for i, n := range c.Nodes {
		if n.Server != nil && n.Server.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// WaitStreamCurrent polls until the stream has a leader and every running
// node holding a replica is current with it.
func (c *Cluster) WaitStreamCurrent(within time.Duration, stream string) {
	c.t.Helper()
	CheckFor(c.t, within, stream+" has a leader and current replicas", func() bool {
		if c.StreamLeader(stream) < 0 {
			return false
		}
		for _, n := range c.Nodes {
			if n.Server != nil && !n.Server.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
				return false
			}
		}
		return true
	})
}
