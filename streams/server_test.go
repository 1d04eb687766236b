package streams_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
