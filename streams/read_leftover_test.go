package streams_test

import (
	"context"
	"errors"
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

func consumerCount(t *testing.T, h *rtest.JS, stream string) int {
	t.Helper()
	s, err := h.JS.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// Reads (replay, audit, shadow) leave no consumer behind: finished,
// stopped by their callback, or cancelled. They once stayed until the
// server's inactivity threshold (125 after 25 audits, found in backups).
func TestReadsLeaveNoConsumerBehind(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	var outs []streams.Out
	for turn := 1; turn <= 20; turn++ {
		outs = append(outs, *bustest.TurnEvent(t, "acme", "left", turn, "x"))
	}
	bustest.PublishTurns(t, h, outs)
	before := consumerCount(t, h, bus.StreamTurns)
	for i := 0; i < 10; i++ {
		n := 0
		if err := streams.ReadStream(context.Background(), h.JS, bus.StreamTurns, streams.ReadOptions{}, func(streams.Raw) error { n++; return nil }); err != nil || n != 20 {
			t.Fatalf("read %d: %d messages, %v", i, n, err)
		}
	}
	stop := errors.New("enough")
	if err := streams.ReadStream(context.Background(), h.JS, bus.StreamTurns, streams.ReadOptions{}, func(streams.Raw) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("stopped read: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_ = streams.ReadStream(ctx, h.JS, bus.StreamTurns, streams.ReadOptions{}, func(streams.Raw) error { cancel(); return nil })
	if after := consumerCount(t, h, bus.StreamTurns); after != before {
		t.Fatalf("%d consumers on REIN_TURNS after 12 reads, %d before", after, before)
	}
}
