package heapgoal

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                string
		goal, live, scanned uint64
		least               int
		want                int
	}{
		{"small live heap: room up to the goal", 256 * mib, 32 * mib, 0, 100, 700},
		{"stacks and globals count in GOGC's base", 256 * mib, 32 * mib, 32 * mib, 100, 350},
		{"live heap near the goal: GOGC's headroom", 256 * mib, 200 * mib, 0, 100, 100},
		{"live heap past the goal", 256 * mib, 400 * mib, 0, 100, 100},
		{"GOGC 50 past the goal", 256 * mib, 400 * mib, 0, 50, 50},
		{"nothing live yet: counted as minLive", 64 * mib, 0, 0, 100, 1500},
		{"a tiny heap and a large goal: bounded", 8 << 30, mib, 0, 100, maxPercent},
	} {
		if got := Percent(c.goal, c.live, c.scanned, c.least); got != c.want {
			t.Errorf("%s: Percent(%d, %d, %d, %d) = %d, want %d", c.name, c.goal, c.live, c.scanned, c.least, got, c.want)
		}
	}
}

// keep holds the test's live heap.
var keep [][]byte

// TestStartTunesAfterEachCycle grows the live heap between cycles: the GC
// percent follows it after each cycle, and stop restores the one before.
func TestStartTunesAfterEachCycle(t *testing.T) {
	const mib = 1 << 20
	const goal = 96 * mib
	before := readMetrics().gogc
	stop, started := Start(goal)
	if !started {
		t.Fatal("Start(goal) did not start")
	}
	defer func() { keep = nil }()

	// settled waits until the percent in force is what the last cycle's
	// live heap asks for, within a few percent (a cycle of the runtime's
	// own may come between the read and the tune).
	settled := func(what string) uint64 {
		t.Helper()
		var got uint64
		testutil.CheckFor(t, 10*time.Second, what, func() bool {
			m := readMetrics()
			want := uint64(Percent(goal, m.live, m.stacks+m.globals, int(before)))
			got = m.gogc
			return got*100 >= want*95 && got*100 <= want*105
		})
		return got
	}

	keep = append(keep, make([]byte, 8*mib))
	runtime.GC()
	small := settled("the percent for an 8 MiB live heap")
	if small <= 200 {
		t.Fatalf("GC percent %d with 8 MiB live and a %d MiB goal: want the room up to the goal (several hundred)", small, goal/mib)
	}

	keep = append(keep, make([]byte, 64*mib))
	runtime.GC()
	large := settled("the percent for a 72 MiB live heap")
	if large >= small || large < before {
		t.Fatalf("GC percent %d after the live heap grew to 72 MiB (was %d): want it lower, at least GOGC's %d", large, small, before)
	}

	stop()
	stop() // a second call does nothing
	runtime.GC()
	runtime.GC()
	if got := readMetrics().gogc; got != before {
		t.Fatalf("GC percent %d after stop, want %d as before Start", got, before)
	}
}

// TestGOGCIsTheLeastHeadroom: past the goal a cycle gets the GOGC in
// force when tuning started; with the collector off nothing starts.
func TestGOGCIsTheLeastHeadroom(t *testing.T) {
	before := debug.SetGCPercent(60)
	defer debug.SetGCPercent(before)
	keep = append(keep, make([]byte, 16<<20))
	defer func() { keep = nil }()
	stop, started := Start(8 << 20) // below what is live
	if !started {
		t.Fatal("Start did not start")
	}
	runtime.GC()
	testutil.CheckFor(t, 10*time.Second, "GC percent 60 past the goal", func() bool { return readMetrics().gogc == 60 })
	stop()
	if got := readMetrics().gogc; got != 60 {
		t.Fatalf("GC percent %d after stop, want 60 as before", got)
	}

	debug.SetGCPercent(-1)
	if stop, started := Start(64 << 20); started {
		stop()
		t.Fatal("Start with the collector off started")
	}
	if _, started := Start(0); started {
		t.Fatal("Start(0) started")
	}
}
