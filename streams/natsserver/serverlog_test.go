package natsserver_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams/natsserver"
)

// The embedded server's own errors reach rein's log (they were discarded,
// so an operator saw nothing of what the server saw): here, a client
// refused for connecting without credentials.
func TestEmbeddedServerLogsItsErrorsThroughReinsLogger(t *testing.T) {
	dir := t.TempDir()
	_, users, err := natsserver.ServerAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bustest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:0", Users: users, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if nc, err := nats.Connect(s.ClientURL(), nats.NoReconnect(), nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		t.Fatal("a client without credentials was let in")
	}
	rtest.CheckFor(t, 5*time.Second, "the server's authentication error in rein's log", func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Contains(line, "level=ERROR") && strings.Contains(line, "component=nats-server") &&
				strings.Contains(strings.ToLower(line), "authentication") {
				return true
			}
		}
		return false
	})
	if strings.Contains(out.String(), "level=DEBUG") || strings.Contains(out.String(), "level=INFO") {
		t.Errorf("lines below the logger's level were written:\n%s", out.String())
	}
}
