package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams"
)

// JS is an in-process JetStream server with a connection, provisioned with
// every rein stream.
type JS struct {
	Server *server.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	Dir    string
}

// StartJetStream starts an embedded server with file storage in dir (a new
// temporary directory when dir is empty), connects in-process and provisions
// rein's streams. Everything is closed when the test ends.
func StartJetStream(t testing.TB, dir string) *JS {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := streams.StartEmbedded(streams.ServerConfig{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start embedded server: %v", err)
	}
	nc, err := streams.Connect(streams.ConnectConfig{InProcess: s, Name: t.Name()})
	if err != nil {
		s.Shutdown()
		t.Fatalf("connect: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := streams.Provision(ctx, js, streams.DefaultProvision()); err != nil {
		t.Fatalf("provision: %v", err)
	}
	h := &JS{Server: s, Conn: nc, JS: js, Dir: dir}
	t.Cleanup(h.Stop)
	return h
}

// Stop closes the connection and shuts the server down (idempotent).
func (h *JS) Stop() {
	if h.Conn != nil {
		h.Conn.Close()
	}
	if h.Server != nil {
		h.Server.Shutdown()
		h.Server.WaitForShutdown()
	}
}

// URL is the server's client URL for out-of-process style clients.
func (h *JS) URL() string { return h.Server.ClientURL() }

// StreamMsgs returns the number of messages in a stream.
func (h *JS) StreamMsgs(t testing.TB, name string) uint64 {
	t.Helper()
	s, err := h.JS.Stream(context.Background(), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatalf("stream %s info: %v", name, err)
	}
	return info.State.Msgs
}

// WaitAcked polls, up to within, until the durable consumer has acked every
// message of its stream through sequence through and has none pending.
func (h *JS) WaitAcked(t testing.TB, within time.Duration, stream, durable string, through uint64) {
	t.Helper()
	CheckFor(t, within, durable+" acked its messages", func() bool {
		c, err := h.JS.Consumer(context.Background(), stream, durable)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= through && info.NumAckPending == 0
	})
}
