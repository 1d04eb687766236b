package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
)

// The Publisher reuses an event's header map once the message is
// acknowledged, but never the map of a message sent twice: the client may
// still hold the first copy and send it again (it does on "no
// responders"), reading the map then. Here a stand-in for the stream holds
// A's first copy unanswered (A goes again and is acknowledged), lets B
// through several times, then answers A's first copy "no responders": the
// client's resend must still carry A's headers, not B's.
func TestPublisherNeverReusesTheHeaderOfAPendingMessage(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	sub, err := h.Conn.SubscribeSync("rein.fake.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	next := func(what string) *nats.Msg {
		t.Helper()
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return m
	}
	seq := 0
	ack := func(m *nats.Msg) {
		t.Helper()
		seq++
		if err := m.Respond(fmt.Appendf(nil, `{"stream":"FAKE","seq":%d}`, seq)); err != nil {
			t.Fatal(err)
		}
	}
	p := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{AckTimeout: 200 * time.Millisecond, RetryFor: time.Millisecond})
	publish := func(o *streams.Out) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := p.Publish(context.Background(), "FAKE", "rein.fake.acme.c1", o.Event)
			done <- err
		}()
		return done
	}
	wait := func(done <-chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer", what)
		}
	}

	a := bustest.TurnEvent(t, "acme", "c1", 1, "first")
	doneA := publish(a)
	heldA := next("A's first copy")
	ack(next("A's second copy")) // after the first attempt's bound
	wait(doneA, "publish A")

	for i := range 5 {
		b := bustest.TurnEvent(t, "acme", "c1", 2+i, "later")
		doneB := publish(b)
		ack(next("B"))
		wait(doneB, "publish B")
	}

	noResponders := nats.NewMsg(heldA.Reply)
	noResponders.Header.Set("Status", "503")
	if err := h.Conn.PublishMsg(noResponders); err != nil {
		t.Fatal(err)
	}
	resent := next("A's first copy sent again")
	if got, want := resent.Header.Get("ce-id"), a.Event.ID(); got != want {
		t.Fatalf("the client's resend of A carries ce-id %q, want A's %q: A's header map was reused while A was pending", got, want)
	}
	if got := resent.Header.Get("ce-id"); got != heldA.Header.Get("ce-id") {
		t.Fatalf("resend ce-id %q, first copy %q", got, heldA.Header.Get("ce-id"))
	}
}
