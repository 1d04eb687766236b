package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// TestKeysAddTenant: a tenant's ingress identity is generated in the data
// dir, listed with its public key, and a bad tenant id is refused.
func TestKeysAddTenant(t *testing.T) {
	dir := t.TempDir()
	out, err := runCLI(t, context.Background(), "keys", "add-tenant", "acme", "--data-dir", dir)
	if err != nil {
		t.Fatalf("add-tenant: %v\n%s", err, out)
	}
	if !strings.Contains(out, natsserver.KeysDir(dir)) || !strings.Contains(out, "ingress-acme") {
		t.Errorf("add-tenant printed %q, want the seed file", out)
	}
	out, err = runCLI(t, context.Background(), "keys", "list", "--data-dir", dir)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	k, err := natsserver.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{natsserver.IdentityAdmin, natsserver.IdentityDetector, "ingress-acme"} {
		if pub := k.PublicKey(id); pub == "" || !strings.Contains(out, id) || !strings.Contains(out, pub) {
			t.Errorf("list does not show %s with its key %q:\n%s", id, pub, out)
		}
	}
	if _, err := runCLI(t, context.Background(), "keys", "add-tenant", "not.a.tenant", "--data-dir", dir); err == nil {
		t.Error("a bad tenant id was accepted")
	}
}

// TestKeysAddTenantWithoutARestart: a tenant added to a running serve's
// data directory connects within seconds, and a removed one is refused,
// with no restart (issue 35: both needed one).
func TestKeysAddTenantWithoutARestart(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	natsAddr := freePort(t)
	stop := startServe(t, data, natsAddr, freePort(t))
	defer stop()
	if out, err := runCLI(t, context.Background(), "keys", "add-tenant", "globex", "--data-dir", data); err != nil {
		t.Fatalf("add-tenant: %v\n%s", err, out)
	}
	connect := func() error {
		nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: "nats://" + natsAddr, NkeyFile: natsserver.SeedFile(data, "ingress-globex"), InboxPrefix: bus.TenantInbox("globex")})
		if err == nil {
			nc.Close()
		}
		return err
	}
	rtest.CheckFor(t, 30*time.Second, "globex's new key connects to the running serve", func() bool { return connect() == nil })
	if out, err := runCLI(t, context.Background(), "keys", "remove-tenant", "globex", "--data-dir", data); err != nil {
		t.Fatalf("remove-tenant: %v\n%s", err, out)
	}
	rtest.CheckFor(t, 30*time.Second, "globex's removed key is refused", func() bool { return connect() != nil })
}
