package streams_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
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
	// RetryFor: the eight attempts alone.
	p := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{AckTimeout: 100 * time.Millisecond, RetryFor: time.Millisecond})
	ev := bustest.TurnEvent(t, "acme", "c1", 1, "hello")
	done := make(chan error, 1)
	go func() {
		_, err := p.Publish(context.Background(), bus.StreamTurns, "rein.silent.acme.c1", ev.Event)
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
	p := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	ev := bustest.TurnEvent(t, "acme", "c1", 1, "hello")
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
	p := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{RetryFor: time.Millisecond})
	ev := bustest.TurnEvent(t, "acme", "c1", 1, "hello")
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
	js, err := natsserver.NewJetStream(h.Conn)
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

// forge stores, as whoever holds rights to the subject, a message under
// an id of its choosing.
func forge(t *testing.T, h *rtest.JS, subject, id string, turn int) {
	t.Helper()
	o := bustest.TurnEvent(t, "acme", strings.Split(subject, ".")[3], turn, "forged")
	m, err := streams.Encode(subject, o.Event)
	if err != nil {
		t.Fatal(err)
	}
	m.Header.Set(bus.HeaderMsgID, id)
	if _, err := h.JS.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// TestDuplicateAckOfAnotherMessageIsAnIDHijack: a message JetStream drops
// as a duplicate counts as stored only when the stored one is its own
// copy (same subject, same event). A forged task stored first under the
// real task's id, on another conversation's subject or for another turn,
// makes the real task's publish fail permanently (ErrIDHijack, counted),
// so its stage dead-letters the input instead of acking a task that was
// never stored. On the code before, the publish returned the forged
// message's sequence as the task's.
func TestDuplicateAckOfAnotherMessageIsAnIDHijack(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	id := schemas.EventID("task", "acme", "c1", 1)
	forge(t, h, bus.TaskSubject("acme", "other"), id, 1)
	forge(t, h, bus.TaskSubject("acme", "c1"), schemas.EventID("task", "acme", "c1", 2), 7)
	reg := prometheus.NewRegistry()
	_, ijs := h.ConnectAs(t, natsserver.IdentityDetector, nil)
	p := streams.NewPublisher(ijs, reg, streams.PublisherConfig{})
	ctx := context.Background()
	real := func(turn int) *event.Event {
		o := bustest.TurnEvent(t, "acme", "c1", turn, "the real task")
		o.Event.SetID(schemas.EventID("task", "acme", "c1", turn))
		return o.Event
	}
	for turn := 1; turn <= 2; turn++ {
		_, err := p.Publish(ctx, bus.StreamTasks, bus.TaskSubject("acme", "c1"), real(turn))
		if !errors.Is(err, streams.ErrIDHijack) || !errors.Is(err, streams.ErrPermanent) {
			t.Errorf("turn %d's task under a forged id: %v, want a permanent ErrIDHijack", turn, err)
		}
	}
	if got := testutil.ToFloat64(p.HijackedCounter(bus.StreamTasks)); got != 2 {
		t.Errorf("rein_publish_id_conflicts_total{stream=REIN_TASKS} = %v, want 2", got)
	}
	// Its own copy again is a duplicate as before.
	seq, err := p.Publish(ctx, bus.StreamTasks, bus.TaskSubject("acme", "c1"), real(3))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := p.Publish(ctx, bus.StreamTasks, bus.TaskSubject("acme", "c1"), real(3)); err != nil || again != seq {
		t.Errorf("the same task again: seq %d, %v; want the first's %d", again, err, seq)
	}

	// Through a stage's consume loop: the input is dead-lettered with the
	// reason, never acked as handled.
	stop := bustest.RunConsumer(t, h, consume.ConsumerConfig{Attempts: 3}, nil, func(ctx context.Context, d streams.Decoded) error {
		_, err := p.Publish(ctx, bus.StreamTasks, bus.TaskSubject("acme", "c1"), real(1))
		return err
	})
	defer stop()
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "c1", 1, "hello")})
	rtest.CheckFor(t, 10*time.Second, "the turn dead-lettered", func() bool { return h.StreamMsgs(t, bus.StreamDLQ) == 1 })
	s, _ := h.JS.Stream(ctx, bus.StreamDLQ)
	raw, err := s.GetLastMsgForSubject(ctx, bus.DLQSubject("test"))
	if err != nil || !strings.Contains(string(raw.Data), streams.ErrIDHijack.Error()) {
		t.Fatalf("dead letter %s (%v): want the id hijack as its reason", raw.Data, err)
	}
}
