package consume_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// rawTurn stores body on a user-turn subject as a client would, with a
// header of hdrBytes bytes.
func rawTurn(t *testing.T, h *rtest.JS, conv string, body []byte, hdrBytes int) {
	t.Helper()
	m := nats.NewMsg(bus.TurnSubject("acme", conv, "user"))
	m.Data = body
	if hdrBytes > 0 {
		m.Header.Set("X-Padding", strings.Repeat("h", hdrBytes))
	}
	if _, err := h.JS.PublishMsg(context.Background(), m); err != nil {
		t.Fatalf("store %d bytes: %v", len(body), err)
	}
}

// Issue 32, observation 2: a message over the event limit was dead-lettered
// whole (base64: 4/3 of it), so the largest one a client could store had a
// dead letter too large to store, and was released for redelivery for
// ever. Now its dead letter keeps a 16 KiB prefix, the size and the
// SHA-256, once; list shows it, redrive refuses it. On the code before,
// the dead letter held the whole body (no truncated flag, no digest).
func TestADeadLetterOfAnOversizeMessageIsBounded(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	bustest.RunConsumer(t, h, consume.ConsumerConfig{Quarantine: true}, reg, func(context.Context, streams.Decoded) error { return nil })
	// The largest body a client can store: the stream's limit less a
	// header's room.
	body := bytes.Repeat([]byte("x"), streams.MaxMessageBytes-4<<10)
	rawTurn(t, h, "big", body, 2<<10)
	rtest.CheckFor(t, 20*time.Second, "the oversize turn dead-lettered", func() bool {
		return h.StreamMsgs(t, bus.StreamDLQ) == 1
	})
	dls := readDLQ(t, h)
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	dl := dls[0]
	sum := sha256.Sum256(body)
	if !dl.Truncated || dl.Size != int64(len(body)) || dl.SHA256 != hex.EncodeToString(sum[:]) ||
		!bytes.Equal(dl.Data, body[:streams.DeadLetterPrefixBytes]) || !strings.Contains(dl.Reason, "oversize") {
		t.Errorf("dead letter: truncated %v, size %d, sha256 %q, %d bytes kept, reason %q; want the first %d of %d bytes and their digest",
			dl.Truncated, dl.Size, dl.SHA256, len(dl.Data), dl.Reason, streams.DeadLetterPrefixBytes, len(body))
	}
	if got := len(dl.Headers["X-Padding"]); got != 1 {
		t.Errorf("the original's header is not kept (cut): %d values", got)
	}
	// Dead-lettered once, never handed back.
	rtest.CheckFor(t, 10*time.Second, "acked", func() bool { return testutil.ToFloat64(counter(reg, "dlq")) == 1 })
	if n := testutil.ToFloat64(counter(reg, "requeue")); n != 0 {
		t.Errorf("released for redelivery %v times", n)
	}
	entries, err := consume.ListDeadLetters(context.Background(), h.JS, consume.DeadLetterFilter{})
	if err != nil || len(entries) != 1 || !entries[0].Letter.Truncated {
		t.Fatalf("list: %v, %d entries", err, len(entries))
	}
	res, err := consume.Redrive(context.Background(), streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), entries, false)
	if err != nil || len(res.Redriven) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Why, "truncated") {
		t.Errorf("redrive of a truncated dead letter: %v, %+v; want it skipped as truncated", err, res)
	}
	// Above the stream's limit a message is not stored at all.
	m := nats.NewMsg(bus.TurnSubject("acme", "huge", "user"))
	m.Data = make([]byte, streams.MaxMessageBytes+1)
	if _, err := h.JS.PublishMsg(context.Background(), m); err == nil {
		t.Error("REIN_TURNS stored a message over MaxMessageBytes")
	}
}

// Issue 32, LOW item of observation 7: a dead letter over 256 KiB (the
// whole body of a turn just under the event limit, in base64) was stored,
// but `dlq list` skipped it and `dlq show` said it was not a dead letter:
// the reader decoded the dead-letter stream with the event limit.
func TestADeadLetterAboveTheEventLimitIsListed(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	bustest.RunConsumer(t, h, consume.ConsumerConfig{}, reg, func(context.Context, streams.Decoded) error { return nil })
	body := bytes.Repeat([]byte("y"), streams.DefaultMaxEventBytes-1<<10) // not a CloudEvent: dead-lettered whole
	rawTurn(t, h, "near", body, 0)
	rtest.CheckFor(t, 20*time.Second, "dead-lettered", func() bool { return h.StreamMsgs(t, bus.StreamDLQ) == 1 })
	entries, err := consume.ListDeadLetters(context.Background(), h.JS, consume.DeadLetterFilter{FromSeq: 1, ToSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("list of REIN_DLQ #1 found %d dead letters, want 1", len(entries))
	}
	if e := entries[0]; e.Letter.Truncated || !bytes.Equal(e.Letter.Data, body) {
		t.Errorf("a body within the event limit is kept whole: truncated %v, %d of %d bytes", e.Letter.Truncated, len(e.Letter.Data), len(body))
	}
}

// Issue 32, observation 2: a message whose dead letter could not be stored
// was released for redelivery, for ever (255 times in 80 s, and again after
// every restart). A dead letter refused for anything but an outage is now
// tried Attempts times; then the message is terminated, left in its
// stream, and counted by reason. On the code before, the loop released it
// again and again (requeue climbing, nothing terminated).
func TestAMessageWhoseDeadLetterIsRefusedIsTerminated(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	// A dead-letter stream that refuses every dead letter as too large.
	s, err := h.JS.Stream(ctx, bus.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = 64
	if _, err := h.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	bustest.RunConsumer(t, h, consume.ConsumerConfig{Quarantine: true, Attempts: 3, Backoff: time.Millisecond}, reg,
		func(context.Context, streams.Decoded) error { return nil })
	rawTurn(t, h, "poison", []byte("not an event"), 0)
	terminated := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if mf.GetName() == telemetry.MStageTerminated && len(m.GetLabel()) == 2 &&
					m.GetLabel()[0].GetValue() == "too_large" && m.GetLabel()[1].GetValue() == "test" { // reason, stage
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	rtest.CheckFor(t, 20*time.Second, "terminated", func() bool { return terminated() == 1 })
	// Not handed back: the consumer has nothing pending or redelivered,
	// and the message stays in its stream (it was never recorded).
	ci, err := h.JS.Consumer(ctx, bus.StreamTurns, "test")
	if err != nil {
		t.Fatal(err)
	}
	rtest.CheckFor(t, 10*time.Second, "nothing pending", func() bool {
		info, err := ci.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	info, _ := ci.Info(ctx)
	if info.NumRedelivered != 0 || testutil.ToFloat64(counter(reg, "requeue")) != 0 {
		t.Errorf("redelivered %d, requeued %v; want neither", info.NumRedelivered, testutil.ToFloat64(counter(reg, "requeue")))
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 1 {
		t.Errorf("REIN_TURNS holds %d messages, want the terminated one kept", n)
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("REIN_DLQ holds %d", n)
	}
}
