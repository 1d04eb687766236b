package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// One conversation of 101 turns: turn k is stored 1 ms after its publish,
// its task k ms later, its reply 2 ms after that and seen 0.5 ms later;
// turn 101 has no reply, so it is left out.
func TestHopsOnFixedInstants(t *testing.T) {
	base := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	c := newTurnClock(base, 1, 101)
	conv := convName(0)
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for k := 1; k <= 101; k++ {
		pub := ms(10 * float64(k))
		i, ok := c.index(conv, k)
		if !ok || i != k-1 {
			t.Fatalf("index(%s, %d) = %d, %v", conv, k, i, ok)
		}
		c.at[atPublished][i] = pub
		c.setStored(atTurnStored, conv, k, base.Add(pub+ms(1)))
		c.setStored(atTaskStored, conv, k, base.Add(pub+ms(1+float64(k))))
		if k <= 100 {
			c.setStored(atReplyStored, conv, k, base.Add(pub+ms(3+float64(k))))
			c.at[atSeen][i] = pub + ms(3.5+float64(k))
		}
	}
	// A message stored again later (an output published twice) and
	// turns the bench did not offer change nothing.
	c.setStored(atTurnStored, conv, 1, base.Add(time.Hour))
	for _, bad := range []struct {
		conv string
		turn int
	}{{"b00001", 1}, {"b0", 1}, {"x00000", 1}, {conv, 0}, {conv, 102}, {"b-0001", 1}} {
		if _, ok := c.index(bad.conv, bad.turn); ok {
			t.Errorf("index(%q, %d) accepted", bad.conv, bad.turn)
		}
		c.setStored(atTurnStored, bad.conv, bad.turn, base)
	}

	hops, n := c.hops()
	if n != 100 || len(hops) != 4 {
		t.Fatalf("%d turns, hops %+v; want 100 turns, 4 hops", n, hops)
	}
	// The slowest turns (end to end at or above the p99, 102.5 ms) are
	// turns 99 and 100: the detector's leg holds their tail.
	want := []Hop{
		{Name: HopIngest, P50Ms: 1, P99Ms: 1, TailMeanMs: 1},
		{Name: HopDetect, P50Ms: 50, P99Ms: 99, TailMeanMs: 99.5},
		{Name: HopAgent, P50Ms: 2, P99Ms: 2, TailMeanMs: 2},
		{Name: HopNotify, P50Ms: 0.5, P99Ms: 0.5, TailMeanMs: 0.5},
	}
	for k, h := range hops {
		w := want[k]
		if h.Name != w.Name || !nearMs(h.P50Ms, w.P50Ms) || !nearMs(h.P99Ms, w.P99Ms) || !nearMs(h.TailMeanMs, w.TailMeanMs) {
			t.Errorf("hop %d = %+v, want %+v", k, h, w)
		}
	}
	lat := c.latencies()
	if len(lat) != 100 {
		t.Errorf("%d latencies, want the 100 turns seen", len(lat))
	}

	if hops, n := newTurnClock(base, 1, 1).hops(); hops != nil || n != 0 {
		t.Errorf("a clock with nothing stored gave %+v, %d", hops, n)
	}
}

func nearMs(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// readStored takes each turn's instants from the streams' own stored
// times: the user turn and the agent reply from REIN_TURNS, the task from
// REIN_TASKS; another tenant's messages and a reply published twice are
// ignored.
func TestReadStoredTakesTheStreamsTimestamps(t *testing.T) {
	h := testutil.StartJetStream(t, "")
	ctx := context.Background()
	base := time.Now()
	c := newTurnClock(base, 2, 2)
	stored := map[[2]int]uint64{} // (instant, index) → stream sequence
	pub := func(instant int, subject, conv string, turn int) {
		t.Helper()
		m := nats.NewMsg(subject)
		m.Header.Set(bus.HeaderCEPrefix+schemas.ExtConversation, conv)
		m.Header.Set(bus.HeaderCEPrefix+schemas.ExtTurn, strconv.Itoa(turn))
		m.Data = []byte("{}")
		ack, err := h.JS.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if i, ok := c.index(conv, turn); ok && instant >= 0 {
			if _, seen := stored[[2]int{instant, i}]; !seen {
				stored[[2]int{instant, i}] = ack.Sequence
			}
		}
	}
	for turn := 1; turn <= 2; turn++ {
		for n := range 2 {
			conv := convName(n)
			pub(atTurnStored, bus.TurnSubject(tenant, conv, schemas.RoleUser), conv, turn)
			pub(-1, bus.TurnSubject("other", conv, schemas.RoleUser), conv, turn)
			pub(atTaskStored, bus.TaskSubject(tenant, conv), conv, turn)
			pub(atReplyStored, bus.TurnSubject(tenant, conv, schemas.RoleAgent), conv, turn)
		}
	}
	pub(atReplyStored, bus.TurnSubject(tenant, convName(0), schemas.RoleAgent), convName(0), 1)

	if err := readStored(ctx, h.JS, c); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 12 {
		t.Fatalf("%d instants published, want 12", len(stored))
	}
	for key, seq := range stored {
		name := bus.StreamTurns
		if key[0] == atTaskStored {
			name = bus.StreamTasks
		}
		s, err := h.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.at[key[0]][key[1]], m.Time.Sub(base); got != want {
			t.Errorf("instant %d of turn slot %d = %v, want %v (stored at sequence %d of %s)", key[0], key[1], got, want, seq, name)
		}
	}
}

// Replies seen one every 10 ms for 20 s, then a pause, then a burst after
// the window: the window's rate is 100/s, whatever came after it, and a
// window shorter than sustainedMin measures nothing.
func TestSeenPerSecCountsOnlyTheWindow(t *testing.T) {
	c := newTurnClock(time.Now(), 1, 3000)
	for i := range 2000 {
		c.at[atSeen][i] = time.Duration(i) * 10 * time.Millisecond
	}
	for i := 2000; i < 2999; i++ {
		c.at[atSeen][i] = 30*time.Second + time.Duration(i)*time.Microsecond
	} // the last turn was never seen
	if got := c.seenPerSec(2*time.Second, 12*time.Second); got < 100 || got > 100.2 {
		t.Errorf("seenPerSec over 10 s of a 100/s stream = %v, want 100 (±1 reply at the edges)", got)
	}
	if got := c.seenPerSec(10*time.Second, 14*time.Second); got != 0 {
		t.Errorf("a 4 s window measured %v, want 0 (shorter than %s)", got, sustainedMin)
	}
	if got := c.seenPerSec(25*time.Second, 40*time.Second); got < 66 || got > 67 {
		t.Errorf("999 replies in a 15 s window = %v/s, want 66.6", got)
	}
}
