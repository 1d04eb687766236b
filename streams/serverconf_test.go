package streams_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// TestAuthorizationConfigForAnExternalServer: the block `rein keys
// server-config` prints loads into a stock nats-server, and there every
// identity has the embedded server's permissions: the detector stores
// detections, not tasks; a tenant's ingress only that tenant's turns; no
// key, no connection.
func TestAuthorizationConfigForAnExternalServer(t *testing.T) {
	dir := t.TempDir()
	if _, err := streams.AddTenantIngress(dir, "acme"); err != nil {
		t.Fatal(err)
	}
	keys, err := streams.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	if err := keys.WriteAuthorization(&block); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := "listen: 127.0.0.1:-1\njetstream { store_dir: " + strings.ReplaceAll(filepath.Join(t.TempDir(), "js"), `\`, `/`) + " }\n" + block.String()
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server does not load the block: %v\n%s", err, block.String())
	}
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	url := s.ClientURL()
	try := func(seed, subject string) bool {
		nc, err := streams.Connect(streams.ConnectConfig{URL: url, NkeyFile: seed})
		if err != nil {
			t.Fatalf("connect with %s: %v", seed, err)
		}
		defer nc.Close()
		if err := nc.Publish(subject, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return nc.LastError() == nil
	}
	det := keys.SeedFile(streams.IdentityDetector)
	if !try(det, streams.DetectionSubject("acme", "c1")) || try(det, streams.TaskSubject("acme", "c1")) {
		t.Error("the detector's permissions differ from the embedded server's")
	}
	acme := keys.SeedFile("ingress-acme")
	if !try(acme, streams.TurnSubject("acme", "c1", schemas.RoleUser)) || try(acme, streams.TurnSubject("globex", "c1", schemas.RoleUser)) {
		t.Error("acme's ingress identity is not bound to acme")
	}
	if nc, err := streams.Connect(streams.ConnectConfig{URL: url}); err == nil {
		nc.Close()
		t.Error("a connection without a key was accepted")
	}
}
