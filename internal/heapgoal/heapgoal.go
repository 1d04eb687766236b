package heapgoal

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// maxPercent bounds the percent set while the live heap is tiny (before
// the first cycle it reads as nothing).
const maxPercent = 10000

// minLive is the least live heap the percent is computed from, so that a
// process that has barely started is not given an unbounded percent.
const minLive = 4 << 20

// Percent is the GC percent that makes the next cycle's heap goal goal
// bytes, given the live heap and the stacks and globals the collector
// scans (GOGC's base): at least least (the GOGC in force when tuning
// started), at most maxPercent.
func Percent(goal, live, scanned uint64, least int) int {
	live = max(live, minLive)
	if goal <= live {
		return least
	}
	p := float64(goal-live) / float64(live+scanned) * 100
	return max(least, int(math.Round(min(p, maxPercent))))
}

var (
	mu      sync.Mutex
	users   int
	current *tuner
)

// Start sets the heap goal to goal bytes for this process until every
// stop returned has been called; then the GC percent in force before is
// restored. That percent (GOGC, 100 unless set) stays the least headroom
// a cycle gets: past the goal the collector runs as it would without
// one. Tuning is process-wide: while it runs, a later Start's goal
// replaces the earlier one. It reports false, and changes nothing, for
// goal 0 or while the collector is off (GOGC=off).
func Start(goal uint64) (stop func(), started bool) {
	if goal == 0 {
		return func() {}, false
	}
	mu.Lock()
	defer mu.Unlock()
	if current == nil {
		prev := int(readMetrics().gogc) // GOGC=off reads as -1
		if prev < 0 {
			return func() {}, false
		}
		current = &tuner{prev: prev}
		current.goal.Store(goal)
		current.tune()
		current.arm()
	} else {
		current.goal.Store(goal)
		current.tune()
	}
	users++
	var once sync.Once
	return func() { once.Do(release) }, true
}

// release ends one Start's use; the last one restores the GC percent.
func release() {
	mu.Lock()
	defer mu.Unlock()
	users--
	if users > 0 {
		return
	}
	t := current
	current = nil
	t.mu.Lock()
	t.stopped = true
	debug.SetGCPercent(t.prev)
	t.mu.Unlock()
}

// tuner sets the GC percent after every cycle while it runs.
type tuner struct {
	goal    atomic.Uint64
	prev    int // the GC percent to restore
	mu      sync.Mutex
	stopped bool
}

// sentinel is an object kept by nothing: the cycle that finds it
// unreachable runs its cleanup, which tunes and arms the next one. It
// holds a pointer so that it is never packed with other objects in one
// tiny block (whose cleanups run only once the whole block is free).
type sentinel struct{ _ *int }

// arm registers the cleanup that tunes after the next cycle.
func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) {
		t.mu.Lock()
		stopped := t.stopped
		t.mu.Unlock()
		if !stopped {
			t.tune()
			t.arm()
		}
	}, t)
}

// tune sets the GC percent that makes the next cycle's goal t's, from
// what the last cycle found live.
func (t *tuner) tune() {
	m := readMetrics()
	p := Percent(t.goal.Load(), m.live, m.stacks+m.globals, t.prev)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		debug.SetGCPercent(p)
	}
}

// gcMetrics are the collector's figures tune uses.
type gcMetrics struct {
	live, stacks, globals, gogc uint64
}

// metricNames are read by readMetrics, in gcMetrics' order.
var metricNames = [...]string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes", "/gc/gogc:percent"}

func readMetrics() gcMetrics {
	var s [len(metricNames)]metrics.Sample
	for i, n := range metricNames {
		s[i].Name = n
	}
	metrics.Read(s[:])
	var v [len(metricNames)]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return gcMetrics{live: v[0], stacks: v[1], globals: v[2], gogc: v[3]}
}
