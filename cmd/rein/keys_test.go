package main

import (
	"context"
	"strings"
	"testing"

	"github.com/reinception/rein/streams"
)

// TestKeysAddTenant: a tenant's ingress identity is generated in the data
// dir, listed with its public key, and a bad tenant id is refused.
func TestKeysAddTenant(t *testing.T) {
	dir := t.TempDir()
	out, err := runCLI(t, context.Background(), "keys", "add-tenant", "acme", "--data-dir", dir)
	if err != nil {
		t.Fatalf("add-tenant: %v\n%s", err, out)
	}
	if !strings.Contains(out, streams.KeysDir(dir)) || !strings.Contains(out, "ingress-acme") {
		t.Errorf("add-tenant printed %q, want the seed file", out)
	}
	out, err = runCLI(t, context.Background(), "keys", "list", "--data-dir", dir)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	k, err := streams.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{streams.IdentityAdmin, streams.IdentityDetector, "ingress-acme"} {
		if pub := k.PublicKey(id); pub == "" || !strings.Contains(out, id) || !strings.Contains(out, pub) {
			t.Errorf("list does not show %s with its key %q:\n%s", id, pub, out)
		}
	}
	if _, err := runCLI(t, context.Background(), "keys", "add-tenant", "not.a.tenant", "--data-dir", dir); err == nil {
		t.Error("a bad tenant id was accepted")
	}
}
