package streams_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// TestFirstData: the payload of a subject's first message at or after a
// sequence, none past its last or for an unknown subject, an error for an
// unknown stream — and an answer without the stored event's headers,
// smaller on the wire than jetstream's GetMsg of the same message by at
// least those headers.
func TestFirstData(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	turns := []streams.Out{
		*bustest.TurnEvent(t, "acme", "a", 1, "x"), // 1
		*bustest.TurnEvent(t, "acme", "b", 1, "y"), // 2
		*bustest.TurnEvent(t, "acme", "a", 2, "z"), // 3
	}
	bustest.PublishTurns(t, h, turns)
	ctx := context.Background()
	a := bus.ConversationTurns("acme", "a")
	for _, c := range []struct {
		name    string
		subject string
		from    uint64
		want    *streams.Out
	}{
		{"first", a, 0, &turns[0]},
		{"first from 2", a, 2, &turns[2]},
		{"past the last", a, 4, nil},
		{"unknown subject", bus.ConversationTurns("acme", "nobody"), 1, nil},
	} {
		data, ok, err := streams.FirstData(ctx, h.JS, bus.StreamTurns, c.subject, c.from)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == nil && ok:
			t.Errorf("%s: found %s", c.name, data)
		case c.want != nil && (!ok || string(data) != string(c.want.Event.Data())):
			t.Errorf("%s: %q %v, want %q", c.name, data, ok, c.want.Event.Data())
		}
	}
	if _, _, err := streams.FirstData(ctx, h.JS, "NO_SUCH_STREAM", a, 1); err == nil {
		t.Error("no error for a stream that does not exist")
	}

	st, err := h.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	in := func(f func()) uint64 {
		before := h.Conn.Stats().InBytes
		f()
		return h.Conn.Stats().InBytes - before
	}
	var stored *jetstream.RawStreamMsg
	whole := in(func() { stored, err = st.GetMsg(ctx, 3) })
	if err != nil {
		t.Fatal(err)
	}
	headers := 0
	for k, vs := range stored.Header {
		for _, v := range vs {
			headers += len(k) + len(v)
		}
	}
	probe := in(func() { _, _, err = streams.FirstData(ctx, h.JS, bus.StreamTurns, a, 3) })
	if err != nil || headers < 200 || probe+uint64(headers) > whole {
		t.Fatalf("probe answer %d bytes, whole message %d with %d bytes of stored headers (%v)", probe, whole, headers, err)
	}
}
