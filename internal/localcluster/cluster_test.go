package localcluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/localcluster"
)

// Three nodes form one cluster with a meta leader; a node stopped and
// started again on its ports and storage rejoins it.
func TestClusterFormsAndANodeRejoins(t *testing.T) {
	c, err := localcluster.Start(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	if got := strings.Count(c.URLs(), "nats://"); got != 3 {
		t.Fatalf("URLs %q: %d nodes", c.URLs(), got)
	}
	if err := c.WaitMetaReady(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	leader := c.MetaLeader()
	if leader < 0 {
		t.Fatal("no meta leader once ready")
	}
	c.StopNode(leader)
	if c.Nodes[leader].Server != nil {
		t.Fatal("a stopped node still has its server")
	}
	if err := c.StartNode(leader); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(leader); err == nil {
		t.Fatal("starting a running node again: no error")
	}
	if err := c.WaitMetaReady(60 * time.Second); err != nil {
		t.Fatal(err)
	}
}
