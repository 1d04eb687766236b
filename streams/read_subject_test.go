package streams_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

// TestReadSubjectPagesInOrder: one conversation's 600 turns, interleaved
// with another's, come back in order across pages, decoded, and stop
// before the given sequence.
func TestReadSubjectPagesInOrder(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	var outs []streams.Out
	for turn := 1; turn <= 600; turn++ {
		outs = append(outs, *bustest.TurnEvent(t, "acme", "a", turn, "x"), *bustest.TurnEvent(t, "acme", "b", turn, "y"))
	}
	bustest.PublishTurns(t, h, outs)
	ctx := context.Background()
	read := func(from, stop uint64) (turns []int) {
		t.Helper()
		err := streams.ReadSubject(ctx, h.JS, bus.StreamTurns, bus.ConversationTurns("acme", "a"), from, stop, func(r streams.Raw) error {
			if r.Decoded == nil || r.Decoded.Meta.Conversation != "a" || r.Decoded.Sequence != r.Sequence {
				return fmt.Errorf("message %d: %+v", r.Sequence, r)
			}
			turns = append(turns, r.Decoded.Meta.Turn)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return turns
	}
	all := read(0, 0)
	if len(all) != 600 {
		t.Fatalf("read %d turns, want 600", len(all))
	}
	for i, turn := range all {
		if turn != i+1 {
			t.Fatalf("turn %d at %d", turn, i)
		}
	}
	// Conversation a's turn n is at sequence 2n-1: stopping at 801 reads 400.
	if got := read(0, 801); len(got) != 400 || got[399] != 400 {
		t.Fatalf("read before 801: %d turns", len(got))
	}
	// From 600 (turn 300 of b) up to 1001: a's turns 301 to 500.
	if got := read(600, 1001); len(got) != 200 || got[0] != 301 || got[199] != 500 {
		t.Fatalf("read 600..1000: %d turns from %v", len(got), got[:min(1, len(got))])
	}
	none := 0
	if err := streams.ReadSubject(ctx, h.JS, bus.StreamTurns, bus.ConversationTurns("acme", "nobody"), 0, 0, func(streams.Raw) error {
		none++
		return nil
	}); err != nil || none != 0 {
		t.Fatalf("unknown conversation: %d messages, %v", none, err)
	}
}

// TestReadSubjectOnAReinConnection: on a connection rein opens, a batched
// read neither drops a page its reader is slow to take nor allocates the
// client's default 65,536-slot channel per read (512 KiB: at a steady
// 1,000 turns/s with agent-cache misses, three quarters of all allocation).
func TestReadSubjectOnAReinConnection(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	var outs []streams.Out
	for turn := 1; turn <= 600; turn++ {
		outs = append(outs, *bustest.TurnEvent(t, "acme", "a", turn, "x"))
	}
	outs = append(outs, *bustest.TurnEvent(t, "acme", "short", 1, "x"))
	bustest.PublishTurns(t, h, outs)
	ctx := context.Background()

	// The reader holds the first message until the whole first page and its
	// end marker have reached the connection: they must all wait in the queue.
	start := h.Conn.Stats().InMsgs
	n := 0
	err := streams.ReadSubjectRaw(ctx, h.JS, bus.StreamTurns, bus.ConversationTurns("acme", "a"), 0, 0, func(r streams.Raw) error {
		if n++; n == 1 {
			deadline := time.Now().Add(10 * time.Second)
			for h.Conn.Stats().InMsgs-start < 257 {
				if time.Now().After(deadline) {
					return fmt.Errorf("the first page did not arrive: %d messages", h.Conn.Stats().InMsgs-start)
				}
				runtime.Gosched()
			}
		}
		return nil
	})
	if err != nil || n != 600 {
		t.Fatalf("read %d of 600 messages behind a slow reader: %v", n, err)
	}

	// A one-message read allocates kilobytes, not the default queue.
	const reads = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range reads {
		if err := streams.ReadSubjectRaw(ctx, h.JS, bus.StreamTurns, bus.ConversationTurns("acme", "short"), 0, 0,
			func(streams.Raw) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / reads; per > 64<<10 {
		t.Fatalf("a one-message read allocated %d bytes (the whole process's, averaged over %d reads)", per, reads)
	}
}

// TestLastTurn: the turn of a subject's last stored event; nothing found for
// an empty subject or a last message that is not a rein event; and the age
// past which stages check inputs against it.
func TestLastTurn(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "a", 1, "x"), *bustest.TurnEvent(t, "acme", "a", 7, "y"), *bustest.TurnEvent(t, "acme", "b", 2, "z")})
	st, err := h.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	check := func(conv string, want int, wantFound bool) {
		t.Helper()
		turn, found, err := streams.LastTurn(ctx, st, bus.TurnSubject("acme", conv, "user"))
		if err != nil || turn != want || found != wantFound {
			t.Errorf("LastTurn(%s) = %d, %v, %v; want %d, %v", conv, turn, found, err, want, wantFound)
		}
	}
	check("a", 7, true)
	check("b", 2, true)
	check("none", 0, false)
	if d, found, err := streams.LastEvent(ctx, st, bus.TurnSubject("acme", "a", "user")); err != nil || !found ||
		d.Event.ID() != schemas.EventID("turn", "acme", "a", 7)+"-user" || d.Sequence != 2 {
		t.Errorf("LastEvent(a) = %s at %d, %v, %v", d.Event.ID(), d.Sequence, found, err)
	}
	if _, err := h.JS.Publish(ctx, bus.TurnSubject("acme", "b", "user"), []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	check("b", 0, false)
	// The age past which inputs are checked: half the 2-minute window
	// rein provisions, unless configured.
	if got := consume.RecheckAfter(0, st); got != time.Minute {
		t.Errorf("RecheckAfter(0) = %s, want 1m", got)
	}
	if got := consume.RecheckAfter(5*time.Second, st); got != 5*time.Second {
		t.Errorf("RecheckAfter(5s) = %s, want 5s", got)
	}
}

// TestTurnStored: a turn's event is found as the subject's last, or,
// when a later turn's is last (it ran first), among the subject's events;
// its absence then counts only while the stream provably still holds
// everything stored since the turn's input: otherwise it may have aged out
// and the turn counts as stored.
func TestTurnStored(t *testing.T) {
	t.Run("one partition", func(t *testing.T) { turnStored(t, 1) })
	// The read for an overtaken turn's own output finds it under its
	// partition token.
	t.Run("four partitions", func(t *testing.T) { turnStored(t, 4) })
}

func turnStored(t *testing.T, partitions int) {
	h := rtest.StartJetStream(t, "")
	if partitions > 1 {
		bustest.Partitioned(t, h, partitions)
	}
	ctx := context.Background()
	before := time.Now().Add(-time.Hour)
	// x1 first; a's turn 2 never stored; b's turn 2 stored after its turn 3.
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "x", 1, "w"), *bustest.TurnEvent(t, "acme", "a", 1, "x"), *bustest.TurnEvent(t, "acme", "a", 3, "y"),
		*bustest.TurnEvent(t, "acme", "b", 3, "z"), *bustest.TurnEvent(t, "acme", "b", 2, "v")})
	after := time.Now()
	st, err := h.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	check := func(conv string, turn int, since time.Time, want bool) {
		t.Helper()
		d, found, err := streams.TurnStored(ctx, h.JS, st, bus.TurnSubject("acme", conv, "user"), turn, since)
		if err != nil || found != want {
			t.Errorf("TurnStored(%s, %d) = %v, %v; want %v", conv, turn, found, err, want)
		}
		if found && d.Event != nil && d.Meta.Turn != turn {
			t.Errorf("TurnStored(%s, %d) returned turn %d's event", conv, turn, d.Meta.Turn)
		}
	}
	check("a", 3, time.Time{}, true)
	check("a", 1, time.Time{}, true) // read back from under a3
	check("a", 2, time.Time{}, false)
	check("a", 4, time.Time{}, false)
	check("b", 2, time.Time{}, true)
	check("none", 1, time.Time{}, false)

	// The head removed (as a max age or size limit does): a2's event may
	// be gone, unless the stream's first message is no younger than a2's
	// input.
	if err := st.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	check("a", 2, time.Time{}, true)
	check("a", 2, before, true)
	check("a", 2, after, false)
	// A per-subject limit removes events from within.
	cfg := st.CachedInfo().Config
	cfg.MaxMsgsPerSubject = 100
	if _, err := h.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	check("a", 2, after, true)
}

// TestWarnShortWindow: a stage whose output stream's duplicate window is
// shorter than its AckWait is warned about; rein's default window is not.
func TestWarnShortWindow(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	warned := func(name string, cc consume.ConsumerConfig) bool {
		t.Helper()
		st, err := h.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		consume.WarnShortWindow(slog.New(slog.NewTextHandler(&buf, nil)), cc, st)
		return strings.Contains(buf.String(), "level=WARN") && strings.Contains(buf.String(), "stream="+name)
	}
	cc := consume.ConsumerConfig{Stage: bus.StageDetector} // AckWait: the 30 s default
	if warned(bus.StreamDetections, cc) {
		t.Error("warned about the default 2-minute window")
	}
	cc.AckWait = 3 * time.Minute
	if !warned(bus.StreamDetections, cc) {
		t.Error("no warning for a 3-minute ack wait against a 2-minute window")
	}
	cfg := natsserver.DefaultProvision()
	cfg.Defaults.Duplicate = 20 * time.Second
	if _, err := h.JS.UpdateStream(ctx, cfg.StreamConfig(bus.StreamTasks)); err != nil {
		t.Fatal(err)
	}
	if !warned(bus.StreamTasks, consume.ConsumerConfig{Stage: bus.StageInjector}) {
		t.Error("no warning for a 20 s window against the 30 s default ack wait")
	}
}
