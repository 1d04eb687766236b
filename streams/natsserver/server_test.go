package natsserver_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/natsserver"
)

func TestServerConfigRefusesNoAuthAndOpenListenWithoutTLS(t *testing.T) {
	dir := t.TempDir()
	keys, users, err := natsserver.ServerAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  natsserver.ServerConfig
		want error
	}{
		{"loopback", natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:4222", Users: users}, nil},
		{"localhost", natsserver.ServerConfig{DataDir: dir, Listen: "localhost:4222", Users: users}, nil},
		{"ipv6 loopback", natsserver.ServerConfig{DataDir: dir, Listen: "[::1]:4222", Users: users}, nil},
		{"in-process only", natsserver.ServerConfig{DataDir: dir, Users: users}, nil},
		{"no users, loopback", natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:4222"}, natsserver.ErrNoAuth},
		{"no users, in-process", natsserver.ServerConfig{DataDir: dir}, natsserver.ErrNoAuth},
		{"a user without permissions", natsserver.ServerConfig{DataDir: dir, Users: []*server.NkeyUser{{Nkey: keys.PublicKey(natsserver.IdentityAdmin)}}}, natsserver.ErrNoAuth},
		{"all interfaces, no TLS", natsserver.ServerConfig{DataDir: dir, Listen: "0.0.0.0:4222", Users: users}, natsserver.ErrInsecureListen},
		{"lan address, no TLS", natsserver.ServerConfig{DataDir: dir, Listen: "10.1.2.3:4222", Users: users}, natsserver.ErrInsecureListen},
		{"all interfaces, insecure", natsserver.ServerConfig{DataDir: dir, Listen: "0.0.0.0:4222", Users: users, Insecure: true}, nil},
		{"all interfaces, TLS", natsserver.ServerConfig{DataDir: dir, Listen: "0.0.0.0:4222", Users: users, TLSCert: "c.pem", TLSKey: "k.pem"}, nil},
		{"TLS cert without key", natsserver.ServerConfig{DataDir: dir, Listen: "0.0.0.0:4222", Users: users, TLSCert: "c.pem"}, streams.ErrInvalidConfig},
		{"bad port", natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:x", Users: users}, streams.ErrInvalidConfig},
		{"no data dir", natsserver.ServerConfig{Listen: "127.0.0.1:4222", Users: users}, streams.ErrInvalidConfig},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	// StartEmbedded applies the same checks before starting anything.
	if _, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Listen: "0.0.0.0:0", Users: users}); !errors.Is(err, natsserver.ErrInsecureListen) {
		t.Errorf("StartEmbedded on 0.0.0.0 without TLS: %v", err)
	}
	if _, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:0"}); !errors.Is(err, natsserver.ErrNoAuth) {
		t.Errorf("StartEmbedded without users: %v", err)
	}
}

// The embedded server's data directory holds customers' conversations:
// it is private to the process's user, even when it existed before.
func TestDataDirIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Users: testUsers(t, t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %v (%v), want 0700", st.Mode().Perm(), err)
	}
}

// A client port held by another process fails at once, naming it, instead
// of after the start-up timeout with no reason.
func TestPortInUseFailsFastAndSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := natsserver.ServerConfig{DataDir: t.TempDir(), Listen: ln.Addr().String(), Users: testUsers(t, t.TempDir())}
	done := make(chan error, 1)
	go func() {
		s, err := natsserver.StartEmbedded(cfg)
		if err == nil {
			s.Shutdown()
		}
		done <- err
	}()
	// The timer only guards against a hang. Failing fast is what the error
	// shows: the port check names the port; the start-up timeout would not.
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("start on a held port hung: no answer when the 1-minute hang guard ran out")
	}
	if !errors.Is(err, natsserver.ErrNotReady) || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("start on a held port: %v, want ErrNotReady, 'already in use' naming %s", err, ln.Addr())
	}
}

// TestEmbeddedServerTLS: with a certificate the client port requires TLS: a
// plain client is refused, one trusting the CA connects, and in-process
// connections (no socket) still work.
func TestEmbeddedServerTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := rtest.SelfSignedCert(t, t.TempDir())
	keys, users, err := natsserver.ServerAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:0", Users: users, TLSCert: cert, TLSKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	seed := keys.SeedFile(natsserver.IdentityAdmin)
	url := "nats://" + s.Addr().String()
	if nc, err := nats.Connect(url, nats.MaxReconnects(0), nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		t.Error("a plain-text client connected to the TLS port")
	}
	nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: url, NkeyFile: seed, TLSCA: cert})
	if err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if !nc.TLSRequired() {
		t.Error("the server does not require TLS")
	}
	nc.Close()
	nc, err = natsserver.Connect(natsserver.ConnectConfig{InProcess: s, NkeyFile: seed})
	if err != nil {
		t.Fatalf("in-process: %v", err)
	}
	nc.Close()
}

// testUsers generates rein's identities in dir and returns the server's
// users for them.
func testUsers(t *testing.T, dir string) []*server.NkeyUser {
	t.Helper()
	_, users, err := natsserver.ServerAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	return users
}
