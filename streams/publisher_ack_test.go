package streams_test

import (
	"context"
	"errors"
	"strings"
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
	p.SetRetryFor(time.Millisecond) // the eight attempts alone
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

// A stream without a leader (a cluster electing one after losing a node)
// answers every publish with "no responders" at once. The publisher keeps
// trying for its retry window, not only its eight quick attempts (about
// 5 s of backoff, shorter than some elections: `rein publish` and the
// HTTP ingress gave up during one). Here the stream appears 7 s late.
func TestPublishRetriesThroughAStreamWithoutALeader(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	p := streams.NewPublisher(h.JS, nil)
	ev := turnEvent(t, "acme", "c1", 1, "hello")
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := p.Publish(context.Background(), "LATE", "rein.late.acme.c1", ev.Event)
		done <- err
	}()
	timer := time.NewTimer(7 * time.Second)
	defer timer.Stop()
	select {
	case err := <-done:
		t.Fatalf("the publish ended after %s, before the stream had a leader: %v", time.Since(start).Round(time.Millisecond), err)
	case <-timer.C:
	}
	if _, err := h.JS.CreateStream(context.Background(), jetstream.StreamConfig{Name: "LATE", Subjects: []string{"rein.late.>"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("publish once the stream had a leader: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the publish did not finish after the stream came")
	}
}

// Past its window the error says what most likely failed.
func TestPublishWithoutAStreamSaysWhy(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	p := streams.NewPublisher(h.JS, nil)
	p.SetRetryFor(time.Millisecond)
	ev := turnEvent(t, "acme", "c1", 1, "hello")
	_, err := p.Publish(context.Background(), "NONE", "rein.none.acme.c1", ev.Event)
	if err == nil || !strings.Contains(err.Error(), "no leader") || !strings.Contains(err.Error(), "attempts") {
		t.Fatalf("publish to no stream: %v; want the attempts and the likely cause", err)
	}
}

// A lost acknowledgement does not stay pending on the connection for
// ever: past DefaultAckTimeout the future resolves with a timeout and
// leaves the pending set. Without the bound (plain jetstream.New) it stays
// there; once 4,000 are pending, every later publish on the connection
// stalls — a stage's connection after enough leader changes.
func TestLostAcksLeaveTheConnectionsPendingSet(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	sub, err := h.Conn.SubscribeSync("rein.silent.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	js, err := streams.NewJetStream(h.Conn)
	if err != nil {
		t.Fatal(err)
	}
	f, err := js.PublishAsync("rein.silent.acme.c1", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-f.Err():
		if !errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
			t.Fatalf("lost ack resolved with %v, want a timeout", err)
		}
	case <-f.Ok():
		t.Fatal("an ack came from a subscriber that never answers")
	case <-time.After(streams.DefaultAckTimeout + 20*time.Second):
		t.Fatal("the lost ack is still pending")
	}
	if n := js.PublishAsyncPending(); n != 0 {
		t.Fatalf("%d publishes still pending after their timeout", n)
	}
}
