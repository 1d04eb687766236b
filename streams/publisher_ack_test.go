package streams_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
)

// An acknowledgement that never comes (lost in a leader change or a
// reconnect; here, a subscriber that takes the publish and never answers)
// does not block the publisher forever, even under a context without a
// deadline: each attempt waits its bound, then the publish is retried and
// finally fails. It once waited forever, and a stage's handler with it,
// stalling its conversation (the cluster chaos test's lost outcomes).
func TestPublishDoesNotWaitForeverForALostAck(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	sub, err := h.Conn.SubscribeSync("rein.silent.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	p := streams.NewPublisher(h.JS, nil)
	p.SetAckTimeout(100 * time.Millisecond)
	ev := turnEvent(t, "acme", "c1", 1, "hello")
	done := make(chan error, 1)
	go func() {
		_, err := p.Publish(context.Background(), streams.StreamTurns, "rein.silent.acme.c1", ev.Event)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
			t.Fatalf("publish without an ack: %v, want a timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the publisher still waits for an acknowledgement that never comes")
	}
	if n, _, _ := sub.Pending(); n < 2 {
		t.Errorf("the publish was sent %d times, want it retried", n)
	}
}
