package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Window is a span of time the overview's counts and rates cover: the
// last Span, or (Span 0) everything since rein started.
type Window struct {
	Name string        `json:"name"` // the ?window= value: 1m, 5m, 15m, 1h, all
	Span time.Duration `json:"-"`
	Text string        `json:"text"` // "last 15 minutes"
}

// Windows are the selectable windows, shortest first; WindowAll is the
// default (and what /metrics' counters say).
var Windows = []Window{
	{"1m", time.Minute, "last minute"},
	{"5m", 5 * time.Minute, "last 5 minutes"},
	{"15m", 15 * time.Minute, "last 15 minutes"},
	{"1h", time.Hour, "last hour"},
	{WindowAll, 0, "since rein started"},
}

// WindowAll is the window of everything since the process started.
const WindowAll = "all"

// ParseWindow returns the named window; "" is WindowAll.
func ParseWindow(name string) (Window, error) {
	if name == "" {
		name = WindowAll
	}
	for _, w := range Windows {
		if w.Name == name {
			return w, nil
		}
	}
	names := make([]string, len(Windows))
	for i, w := range Windows {
		names[i] = w.Name
	}
	return Window{}, fmt.Errorf("%w: window %q (want one of %s)", ErrBadQuery, name, strings.Join(names, ", "))
}

// trendPoints is how many buckets a window's sparklines have.
const trendPoints = 12

// sample is the counters at one moment.
type sample struct {
	at   time.Time
	mv   metricsView
	dlq  float64
	hasQ bool // dlq was read
}

// history keeps the samples of the longest window (and a little more), at
// most one per minGap, so memory is bounded however often pages poll. The
// counters were zero when the dashboard was built (with the process), which
// is the baseline of any window reaching further back than the samples.
type history struct {
	mu      sync.Mutex
	started time.Time
	minGap  time.Duration
	keep    time.Duration
	samples []sample
}

func newHistory(started time.Time, minGap time.Duration) *history {
	return &history{started: started, minGap: minGap, keep: Windows[len(Windows)-2].Span + 2*minGap}
}

// add records a sample (skipped when the last one is more recent than
// minGap) and forgets those older than keep, but never the one that is the
// baseline of the longest window.
func (h *history) add(s sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.samples); n > 0 && s.at.Sub(h.samples[n-1].at) < h.minGap {
		return
	}
	h.samples = append(h.samples, s)
	cut := 0
	for cut+1 < len(h.samples) && s.at.Sub(h.samples[cut+1].at) >= h.keep {
		cut++
	}
	if cut > 0 {
		h.samples = append(h.samples[:0:0], h.samples[cut:]...)
	}
}

// at returns the counters as they were at t: the latest sample at or
// before t, or zero counters when t is not after the start or before every
// sample (the process had just started); ok is false in that case.
func (h *history) at(t time.Time) (sample, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best *sample
	if !t.After(h.started) {
		return sample{at: h.started, mv: newMetricsView()}, false
	}
	for i := range h.samples {
		if h.samples[i].at.After(t) {
			break
		}
		best = &h.samples[i]
	}
	if best == nil {
		return sample{at: h.started, mv: newMetricsView()}, false
	}
	return *best, true
}

// firstDLQ is the dead-letter count first read (the baseline of "new dead
// letters"), if any sample read it.
func (h *history) firstDLQ() (float64, time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.samples {
		if s.hasQ {
			return s.dlq, s.at, true
		}
	}
	return 0, time.Time{}, false
}

// add adds b's decisions and activations to a, key by key.
func (a metricsView) add(b metricsView) {
	for k, n := range b.decisions {
		a.decisions[k] += n
	}
	for k, n := range b.activations {
		a.activations[k] += n
	}
}

// sub returns a − b, key by key (counters only grow within one process).
func (a metricsView) sub(b metricsView) metricsView {
	out := newMetricsView()
	for k, v := range a.decisions {
		if d := v - b.decisions[k]; d > 0 {
			out.decisions[k] = d
		}
	}
	for k, v := range a.activations {
		if d := v - b.activations[k]; d > 0 {
			out.activations[k] = d
		}
	}
	for k, v := range a.models {
		out.models[k] = v
	}
	for k, h := range a.latency {
		out.latency[k] = h.minus(b.latency[k])
	}
	return out
}

// Trend is a window's sparklines: decisions and activation rate per
// bucket, as SVG polyline points in a 0..TrendWidth × 0..TrendHeight box
// (y grows downwards), and the values for a tooltip.
type Trend struct {
	Decisions     string `json:"decisions"`      // polyline points
	Rate          string `json:"rate"`           // polyline points (judged buckets only)
	DecisionsText string `json:"decisions_text"` // "3 5 0 …" per bucket
	RateText      string `json:"rate_text"`      // "20% 33% – …" per bucket
	BucketText    string `json:"bucket_text"`    // "each point: 75s"
}

// Sparkline box.
const (
	TrendWidth  = 120
	TrendHeight = 24
)

// trend splits [from, to] into trendPoints buckets and measures each from
// the samples (filtered like the overview).
//
// cur is the sample of this moment (the history may have skipped it as too
// close to the previous one); it ends the last bucket.
func (h *history) trend(from, to time.Time, f filter, cur sample) Trend {
	step := to.Sub(from) / trendPoints
	if step <= 0 {
		return Trend{}
	}
	at := func(t time.Time) sample {
		if !t.Before(to) || !t.Before(cur.at) {
			return cur // cur was read a moment after to was
		}
		s, _ := h.at(t)
		return s
	}
	dec := make([]float64, trendPoints)
	rates := make([]float64, trendPoints)
	judgedAny := make([]bool, trendPoints)
	prev := at(from)
	for i := range trendPoints {
		end := from.Add(step * time.Duration(i+1))
		if i == trendPoints-1 {
			end = to // step was rounded down: the last bucket ends now
		}
		next := at(end)
		d := next.mv.sub(prev.mv)
		total, activated, failed := d.totals(f)
		dec[i] = total
		if judged := total - failed; judged > 0 {
			rates[i], judgedAny[i] = activated/judged, true
		}
		prev = next
	}
	var t Trend
	var rp, rt []string
	x := func(i int) float64 { return float64(i) * TrendWidth / (trendPoints - 1) }
	t.Decisions, t.DecisionsText = sparkline(dec)
	for i := range trendPoints {
		if judgedAny[i] {
			rp = append(rp, fmt.Sprintf("%.1f,%.1f", x(i), TrendHeight-rates[i]*TrendHeight))
			rt = append(rt, fmt.Sprintf("%.0f%%", rates[i]*100))
		} else {
			rt = append(rt, "–")
		}
	}
	if len(rp) == 1 {
		// One point draws nothing: make it a short dash.
		x, y, _ := strings.Cut(rp[0], ",")
		if v, err := strconv.ParseFloat(x, 64); err == nil {
			rp = append([]string{fmt.Sprintf("%.1f,%s", max(v-3, 0), y)}, rp...)
		}
	}
	t.Rate, t.RateText = strings.Join(rp, " "), strings.Join(rt, " ")
	unit := time.Second
	if step < 10*time.Second {
		unit = 10 * time.Millisecond
	}
	t.BucketText = "each point: " + step.Round(unit).String()
	return t
}
