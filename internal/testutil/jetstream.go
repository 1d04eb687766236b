package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams/natsserver"
)

// JS is an in-process JetStream server with a connection, provisioned with
// every rein stream.
type JS struct {
	Server *server.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	Dir    string
	// Keys are the server's NATS identities (ConnectAs); Conn is admin.
	Keys *natsserver.Keyring
}

// StartJetStream starts an embedded server with file storage in dir (a new
// temporary directory when dir is empty), authenticated like rein serve's
// (the identities of streams.EnsureKeyring, generated in dir), connects
// in-process as admin and provisions rein's streams. Everything is closed
// when the test ends.
func StartJetStream(t testing.TB, dir string) *JS {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	keys, users, err := natsserver.ServerAuth(dir)
	if err != nil {
		t.Fatalf("keyring: %v", err)
	}
	s, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:0", Users: users})
	if err != nil {
		t.Fatalf("start embedded server: %v", err)
	}
	nc, err := natsserver.Connect(natsserver.ConnectConfig{InProcess: s, Name: t.Name(), NkeyFile: keys.SeedFile(natsserver.IdentityAdmin)})
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
	if err := natsserver.Provision(ctx, js, natsserver.DefaultProvision(), nil); err != nil {
		t.Fatalf("provision: %v", err)
	}
	h := &JS{Server: s, Conn: nc, JS: js, Dir: dir, Keys: keys}
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

// ConnectAs opens an in-process connection under one of rein's identities
// (streams.IdentityDetector, …), closed when the test ends. Asynchronous
// errors (permission violations) are sent to errs when it is not nil.
func (h *JS) ConnectAs(t testing.TB, identity string, errs chan<- error) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return h.connect(t, identity, natsserver.ConnectConfig{InProcess: h.Server, AsyncErrors: errs})
}

// ConnectTCP opens a connection over the server's TCP port (not
// in-process) under one of rein's identities, closed when the test ends.
func (h *JS) ConnectTCP(t testing.TB, identity string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return h.connect(t, identity, natsserver.ConnectConfig{URL: h.URL()})
}

// connect opens cc under identity's key, closed when the test ends.
func (h *JS) connect(t testing.TB, identity string, cc natsserver.ConnectConfig) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	cc.Name, cc.NkeyFile = t.Name()+"-"+identity, h.Keys.SeedFile(identity)
	nc, err := natsserver.Connect(cc)
	if err != nil {
		t.Fatalf("connect as %s: %v", identity, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// URL is the server's client URL for out-of-process style clients.
func (h *JS) URL() string { return h.Server.ClientURL() }

// StreamLastSeq is the sequence of the stream's last stored message.
func (h *JS) StreamLastSeq(t testing.TB, name string) uint64 {
	t.Helper()
	return h.streamState(t, name).LastSeq
}

// StreamMsgs returns the number of messages in a stream.
func (h *JS) StreamMsgs(t testing.TB, name string) uint64 {
	t.Helper()
	return h.streamState(t, name).Msgs
}

func (h *JS) streamState(t testing.TB, name string) jetstream.StreamState {
	t.Helper()
	s, err := h.JS.Stream(context.Background(), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatalf("stream %s info: %v", name, err)
	}
	return info.State
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

// DeliverUnacked plays a worker that stopped mid-turn: it creates the
// durable consumer cc (a stage's, from streams.ConsumerConfig.ConsumerConfigJS),
// takes its next n messages and hands them back unacknowledged (a Nak, as
// the server does itself once the ack wait passes), then unpins the
// consumer's priority group so that the stage's own pulls are served at
// once. The stage then sees each of them delivered a second time.
func (h *JS) DeliverUnacked(t testing.TB, stream string, cc jetstream.ConsumerConfig, n int) {
	h.deliver(t, stream, cc, n, true)
}

// DeliverAbandoned fetches n messages through the durable described by cc
// and leaves them unacked, as a holder killed mid-turn does: the server
// redelivers them only after AckWait. The priority group's pin is then
// released, so that the next client is delivered to at once (as it is
// once a dead holder's pin expires).
func (h *JS) DeliverAbandoned(t testing.TB, stream string, cc jetstream.ConsumerConfig, n int) {
	h.deliver(t, stream, cc, n, false)
}

func (h *JS) deliver(t testing.TB, stream string, cc jetstream.ConsumerConfig, n int, nak bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := h.JS.CreateOrUpdateConsumer(ctx, stream, cc)
	if err != nil {
		t.Fatalf("consumer %s: %v", cc.Durable, err)
	}
	var opts []jetstream.FetchOpt
	if len(cc.PriorityGroups) > 0 {
		opts = append(opts, jetstream.FetchPriorityGroup(cc.PriorityGroups[0]))
	}
	batch, err := cons.Fetch(n, append(opts, jetstream.FetchMaxWait(5*time.Second))...)
	if err != nil {
		t.Fatalf("fetch from %s: %v", cc.Durable, err)
	}
	got := 0
	for m := range batch.Messages() {
		if nak {
			if err := m.Nak(); err != nil {
				t.Fatalf("nak: %v", err)
			}
		}
		got++
	}
	if got != n {
		t.Fatalf("fetched %d messages from %s, want %d (err %v)", got, cc.Durable, n, batch.Error())
	}
	if len(cc.PriorityGroups) > 0 {
		s, err := h.JS.Stream(ctx, stream)
		if err != nil {
			t.Fatalf("stream %s: %v", stream, err)
		}
		if err := s.UnpinConsumer(ctx, cc.Durable, cc.PriorityGroups[0]); err != nil {
			t.Fatalf("unpin %s: %v", cc.Durable, err)
		}
	}
}
