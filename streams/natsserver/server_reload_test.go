package natsserver_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// TestTenantsAddedAndRemovedWithoutARestart: a tenant's key added to the
// data directory of a running server connects without a restart, and a
// removed one is disconnected and refused. Before, both needed serve to
// restart (issue 35).
func TestTenantsAddedAndRemovedWithoutARestart(t *testing.T) {
	dir := t.TempDir()
	if _, err := natsserver.AddTenantIngress(dir, "acme"); err != nil {
		t.Fatal(err)
	}
	h := rtest.StartJetStream(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		natsserver.WatchTenants(ctx, h.Server, dir, 20*time.Millisecond, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}()
	defer func() { cancel(); wg.Wait() }()

	connect := func(tenant string) (*nats.Conn, error) {
		return natsserver.Connect(natsserver.ConnectConfig{URL: h.Server.ClientURL(), NkeyFile: natsserver.SeedFile(dir, "ingress-"+tenant), InboxPrefix: bus.TenantInbox(tenant)})
	}
	acme, err := connect("acme")
	if err != nil {
		t.Fatalf("acme, loaded at start: %v", err)
	}
	defer acme.Close()

	seed, err := natsserver.AddTenantIngress(dir, "globex")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var globex *nats.Conn
	for globex == nil {
		if globex, err = connect("globex"); err != nil && time.Now().After(deadline) {
			t.Fatalf("globex (%s) was never let in: %v", seed, err)
		}
	}
	defer globex.Close()
	// rein's own in-process connections live through the reload, and new
	// ones are let in.
	if _, err := h.JS.AccountInfo(context.Background()); err != nil {
		t.Errorf("admin's in-process connection after the reload: %v", err)
	}
	inproc, err := natsserver.Connect(natsserver.ConnectConfig{InProcess: h.Server, NkeyFile: h.Keys.SeedFile(natsserver.IdentityAdmin)})
	if err != nil {
		t.Errorf("a new in-process connection after the reload: %v", err)
	} else {
		inproc.Close()
	}
	// The new key has its tenant's permissions, not more.
	if !bustest.Denied(t, globex, &nats.Msg{Subject: bus.IngestSubject("acme", "c1", "user"), Data: []byte("x")}) {
		t.Error("globex may publish acme's turns")
	}

	if err := natsserver.RemoveTenantIngress(dir, "acme"); err != nil {
		t.Fatal(err)
	}
	for !acme.IsClosed() && acme.Status() == nats.CONNECTED {
		if time.Now().After(deadline) {
			t.Fatal("acme's connection outlived its removed key")
		}
		time.Sleep(10 * time.Millisecond) // a poll interval, not a wait for an outcome
	}
	acme.Close()
	if nc, err := connect("acme"); err == nil {
		nc.Close()
		t.Fatal("a removed tenant's key still connects")
	} else if !errors.Is(err, nats.ErrAuthorization) && !errors.Is(err, nats.ErrAuthExpired) {
		t.Logf("acme refused: %v", err)
	}
}
