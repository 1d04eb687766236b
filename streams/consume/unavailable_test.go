package consume_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// A publish that gave up on an outage says so (ErrUnavailable); one the
// stream refused for what it is does not. Under -race this also proves
// that a retry does not write the headers of a message the client is still
// resending from an earlier attempt (it did: a data race on the header
// map, which outside -race can end the process with a concurrent map
// write).
func TestAPublishThatGaveUpOnAnOutageIsUnavailable(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	// RetryFor: the eight quick attempts alone.
	p := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{RetryFor: time.Millisecond, AckTimeout: 100 * time.Millisecond})
	ev := bustest.TurnEvent(t, "acme", "c1", 1, "hello")
	_, err := p.Publish(context.Background(), "NOWHERE", "rein.nowhere.acme.c1", ev.Event)
	if !errors.Is(err, streams.ErrUnavailable) {
		t.Errorf("publish to a stream that answers nothing: %v, want ErrUnavailable", err)
	}
	// The turns stream exists and answers, but not for this expectation:
	// no retry can help, so it is not an outage.
	_, err = p.Publish(context.Background(), bus.StreamDLQ, ev.Subject, ev.Event)
	if err == nil || errors.Is(err, streams.ErrUnavailable) {
		t.Errorf("publish into the wrong stream: %v, want a refusal that is not ErrUnavailable", err)
	}
}

// A turn whose outputs could not be stored (every attempt's publish gave
// up on an output stream without a leader), or whose context could not be
// read, was dead-lettered once its attempts were spent: the turn then had no detection, task or outcome
// until someone redrove it, and the conversation's later turns ran past
// it. It must be handed back and handled once the stream is back.
func TestAnInputWhoseOutputsCouldNotBeStoredIsHandedBackNotDeadLettered(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	var down atomic.Bool
	down.Store(true)
	var calls atomic.Int32
	bustest.RunConsumer(t, h, consume.ConsumerConfig{Attempts: 2, Backoff: time.Millisecond}, reg, func(_ context.Context, d streams.Decoded) error {
		calls.Add(1)
		switch {
		case !down.Load():
			return nil
		case d.Meta.Conversation == "write":
			return fmt.Errorf("publish detection: %w", streams.ErrUnavailable)
		default: // a read of the agent's replies from a stream without a leader
			return fmt.Errorf("read replies: %w", nats.ErrNoResponders)
		}
	})
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "write", 1, "cancel it"), *bustest.TurnEvent(t, "acme", "read", 1, "cancel it")})
	rtest.CheckFor(t, 20*time.Second, "each turn handed back twice", func() bool {
		return testutil.ToFloat64(counter(reg, "unavailable")) >= 4 || h.StreamMsgs(t, bus.StreamDLQ) > 0
	})
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Fatalf("%d dead letters while the output stream was down: the turn was given up on", n)
	}
	down.Store(false)
	rtest.CheckFor(t, 20*time.Second, "the turn handled once the stream is back", func() bool {
		return testutil.ToFloat64(counter(reg, "ack")) == 2
	})
	if got := calls.Load(); got < 10 {
		t.Errorf("handler ran %d times, want two attempts per delivery over at least two deliveries of each turn, then one", got)
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
}

// The same through a real outage: the handler's publisher finds its output
// stream gone (it answers nothing, as one without a leader does) until the
// stream is back; the turn then has its one output and no dead letter.
func TestATurnWaitsThroughAnOutputStreamOutage(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	ctx := context.Background()
	outs := jetstream.StreamConfig{Name: "OUTS", Subjects: []string{"rein.outs.>"}}
	// RetryFor: the eight quick attempts alone.
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{RetryFor: time.Millisecond, AckTimeout: 100 * time.Millisecond})
	bustest.RunConsumer(t, h, consume.ConsumerConfig{Attempts: 2, Backoff: time.Millisecond}, reg, func(ctx context.Context, d streams.Decoded) error {
		ev := bustest.TurnEvent(t, d.Meta.Tenant, d.Meta.Conversation, d.Meta.Turn, "the answer")
		_, err := pub.Publish(ctx, "OUTS", "rein.outs."+d.Meta.Conversation, ev.Event)
		return err
	})
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "outage", 1, "cancel it")})
	rtest.CheckFor(t, 60*time.Second, "the turn handed back", func() bool {
		return testutil.ToFloat64(counter(reg, "unavailable")) >= 1 || h.StreamMsgs(t, bus.StreamDLQ) > 0
	})
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Fatalf("%d dead letters while the output stream was gone", n)
	}
	if _, err := h.JS.CreateStream(ctx, outs); err != nil {
		t.Fatal(err)
	}
	rtest.CheckFor(t, 60*time.Second, "the turn handled once the stream is back", func() bool {
		return testutil.ToFloat64(counter(reg, "ack")) == 1
	})
	if n := h.StreamMsgs(t, "OUTS"); n != 1 {
		t.Errorf("OUTS holds %d messages, want the turn's one output", n)
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("%d dead letters, want none", n)
	}
}
