package agentworker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	rtest "github.com/reinception/rein/internal/testutil"
)

// A state record whose acknowledgement never comes (lost in a leader
// change; here a subscriber that takes the publish and never answers, on a
// JetStream context without an asynchronous publish timeout) ends the
// write with a timeout. It once waited for ever under the handler's
// context, which has no deadline: in the cluster chaos test a task stayed
// unacknowledged for good and its conversation's later turns were
// answered without it.
func TestStateWriteDoesNotWaitForeverForALostAck(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	sub, err := h.Conn.SubscribeSync("rein.silent.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	js, err := jetstream.New(h.Conn) // no WithPublishAsyncTimeout
	if err != nil {
		t.Fatal(err)
	}
	st := store{js: js, ackWait: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := st.publish(context.Background(), "rein.silent.acme.c1", []byte("{}"))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
			t.Fatalf("state write without an ack: %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the state write still waits for an acknowledgement that never comes")
	}
}
