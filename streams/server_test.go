package streams_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/streams"
)

func TestServerConfigRefusesOpenListenWithoutAuth(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		cfg  streams.ServerConfig
		want error
	}{
		{"loopback", streams.ServerConfig{DataDir: dir, Listen: "127.0.0.1:4222"}, nil},
		{"localhost", streams.ServerConfig{DataDir: dir, Listen: "localhost:4222"}, nil},
		{"ipv6 loopback", streams.ServerConfig{DataDir: dir, Listen: "[::1]:4222"}, nil},
		{"in-process only", streams.ServerConfig{DataDir: dir}, nil},
		{"all interfaces, no auth", streams.ServerConfig{DataDir: dir, Listen: "0.0.0.0:4222"}, streams.ErrInsecureListen},
		{"lan address, no auth", streams.ServerConfig{DataDir: dir, Listen: "10.1.2.3:4222"}, streams.ErrInsecureListen},
		{"all interfaces, user+password", streams.ServerConfig{DataDir: dir, Listen: "0.0.0.0:4222", User: "u", Password: "p"}, nil},
		{"all interfaces, token", streams.ServerConfig{DataDir: dir, Listen: "0.0.0.0:4222", Token: "t"}, nil},
		{"all interfaces, user without password", streams.ServerConfig{DataDir: dir, Listen: "0.0.0.0:4222", User: "u"}, streams.ErrInsecureListen},
		{"bad port", streams.ServerConfig{DataDir: dir, Listen: "127.0.0.1:x"}, streams.ErrConfig},
		{"no data dir", streams.ServerConfig{Listen: "127.0.0.1:4222"}, streams.ErrConfig},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	// StartEmbedded applies the same check before starting anything.
	if _, err := streams.StartEmbedded(streams.ServerConfig{DataDir: dir, Listen: "0.0.0.0:0"}); !errors.Is(err, streams.ErrInsecureListen) {
		t.Errorf("StartEmbedded on 0.0.0.0 without auth: %v", err)
	}
}

// The embedded server's data directory holds customers' conversations:
// it is private to the process's user, even when it existed before.
func TestDataDirIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := streams.StartEmbedded(streams.ServerConfig{DataDir: dir})
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
	start := time.Now()
	_, err = streams.StartEmbedded(streams.ServerConfig{DataDir: t.TempDir(), Listen: ln.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("start on a held port: %v, want 'already in use' naming %s", err, ln.Addr())
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %s to fail, want under 2s", took)
	}
}
