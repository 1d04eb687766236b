package localcluster

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Tag is the server tag every node of a local cluster carries, for
// placement (nats-server server_tags); each node also carries
// "node:<name>".
const Tag = "rein-local"

// ErrNotReady is returned when a node or the cluster is not ready in time.
var ErrNotReady = errors.New("local cluster not ready")

// Cluster is a JetStream cluster of embedded nats-servers in this process,
// on loopback: each node has its own client and route ports and its own
// store directory, and routes to every node, as a real cluster of
// separate machines would. Nodes can be stopped and started again on the
// same ports and storage.
type Cluster struct {
	Name  string
	Nodes []*Node
}

// Node is one server of a Cluster; Server is nil while it is down.
type Node struct {
	Name        string
	Dir         string
	ClientPort  int
	ClusterPort int
	Server      *server.Server
	routes      string
	cluster     string
}

// Start starts an n-node JetStream cluster with its stores under dir and
// waits until every node accepts clients. It does not wait for a meta
// leader (see MetaReady): tests of start-up races want the cluster fresh.
// The ports are picked before the servers bind them, so another process
// may take one in between; the cluster is then started again on other
// ports, up to three times.
func Start(dir string, n int) (*Cluster, error) {
	var err error
	for try := range 3 {
		var c *Cluster
		if c, err = tryStart(filepath.Join(dir, fmt.Sprintf("try%d", try)), n); err == nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("start a %d-node cluster: %w", n, err)
}

func tryStart(root string, n int) (*Cluster, error) {
	c := &Cluster{Name: "rein-local"}
	var routes []string
	for i := range n {
		client, err := freePort()
		if err != nil {
			return nil, err
		}
		route, err := freePort()
		if err != nil {
			return nil, err
		}
		node := &Node{Name: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(root, fmt.Sprintf("n%d", i+1)),
			ClientPort: client, ClusterPort: route, cluster: c.Name}
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", node.ClusterPort))
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		node.routes = strings.Join(routes, ",")
	}
	for i := range c.Nodes {
		if err := c.StartNode(i); err != nil {
			c.Shutdown()
			return nil, err
		}
	}
	return c, nil
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (n *Node) options() *server.Options {
	return &server.Options{
		ServerName: n.Name,
		Host:       "127.0.0.1",
		Port:       n.ClientPort,
		JetStream:  true,
		StoreDir:   n.Dir,
		// A fixed budget per node: a local cluster must not claim the
		// machine's whole disk and memory as its resources.
		JetStreamMaxStore:  1 << 30,
		JetStreamMaxMemory: 256 << 20,
		NoSigs:             true,
		NoLog:              true,
		MaxPayload:         8 << 20,
		Tags:               []string{Tag, "node:" + n.Name},
		Cluster:            server.ClusterOpts{Name: n.cluster, Host: "127.0.0.1", Port: n.ClusterPort},
		Routes:             server.RoutesFromStr(n.routes),
	}
}

// StartNode starts (or restarts) node i on its ports and storage.
func (c *Cluster) StartNode(i int) error {
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
		return fmt.Errorf("%w: node %s not ready for connections on port %d within 30s (port taken?)", ErrNotReady, node.Name, node.ClientPort)
	}
	node.Server = s
	return nil
}

// StopNode shuts node i down (its storage stays for StartNode).
func (c *Cluster) StopNode(i int) {
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
		c.StopNode(i)
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

// MetaReady reports whether one running node is the JetStream meta leader
// and every running node is current with it.
func (c *Cluster) MetaReady() bool {
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
}

// WaitMetaReady polls MetaReady until it holds or within has passed.
func (c *Cluster) WaitMetaReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	for !c.MetaReady() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: no JetStream meta leader within %s", ErrNotReady, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
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

// StreamCurrent reports whether the stream has a leader and every running
// node holding a replica is current with it.
func (c *Cluster) StreamCurrent(stream string) bool {
	if c.StreamLeader(stream) < 0 {
		return false
	}
	for _, n := range c.Nodes {
		if n.Server != nil && !n.Server.JetStreamIsStreamCurrent(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return false
		}
	}
	return true
}
