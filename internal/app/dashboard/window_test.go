package dashboard

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// clocked is a dashboard on its own registry (counters from zero, as in a
// fresh process) with a clock the test moves.
type clocked struct {
	d        *Dashboard
	now      time.Time
	dec, act *prometheus.CounterVec
	model    *prometheus.GaugeVec
	reg      *prometheus.Registry
}

func newClocked(t *testing.T, f *fixture) *clocked {
	t.Helper()
	c := &clocked{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), reg: prometheus.NewRegistry()}
	c.dec = telemetry.NewCounterVec(c.reg, telemetry.MDetectorDecisions, "d", "tenant", "outcome")
	c.act = telemetry.NewCounterVec(c.reg, telemetry.MDetectorActivations, "a", "tenant", "error_type")
	c.model = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: telemetry.MModelAvailable, Help: "m"}, []string{"endpoint"})
	c.reg.MustRegister(c.model)
	d, err := New(Config{CacheTTL: -1}, Deps{JS: f.js.JS, Gatherer: c.reg})
	if err != nil {
		t.Fatal(err)
	}
	d.now = func() time.Time { return c.now }
	d.hist = newHistory(c.now, d.cfg.SampleInterval/2)
	c.d = d
	return c
}

func (c *clocked) overview(t *testing.T, q Query) *Overview {
	t.Helper()
	o, err := c.d.OverviewFor(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (c *clocked) add(tenant, outcome, errorType string, n float64) {
	c.dec.WithLabelValues(tenant, outcome).Add(n)
	if errorType != "" {
		c.act.WithLabelValues(tenant, errorType).Add(n)
	}
}

// Each window counts only what happened within it; a window longer than
// the process's life says so; the tenant filter narrows every number; the
// sparkline's buckets add up to the window's decisions.
func TestWindowedOverview(t *testing.T) {
	c := newClocked(t, newFixture(t))
	t0 := c.now
	c.add("a", "clear", "", 10)
	c.overview(t, Query{})
	c.now = t0.Add(10 * time.Minute)
	c.add("a", "activated", "anaphora", 5)
	c.add("a", "failed", "", 5)
	c.overview(t, Query{})
	c.now = t0.Add(20 * time.Minute)
	c.add("a", "activated", "contradiction", 1)
	c.add("a", "clear", "", 3)
	c.add("b", "activated", "anaphora", 2)

	for _, tc := range []struct {
		q                       Query
		decisions, judged, rate string
		coverage                string
		types                   []string
		trendSum                float64
	}{
		{Query{Window: "5m"}, "6", "6", "50.0%", "last 5 minutes, from 2026-03-01 09:15:00Z", []string{"anaphora", "contradiction"}, 6},
		{Query{Window: "5m", Tenant: "a"}, "4", "4", "25.0%", "last 5 minutes", []string{"contradiction"}, 4},
		{Query{Window: "15m"}, "16", "11", "72.7%", "from 2026-03-01 09:05:00Z", []string{"anaphora", "contradiction"}, 16},
		// One error type: its activations over every judged decision.
		{Query{Window: "5m", ErrorType: "anaphora"}, "6", "6", "33.3%", "last 5 minutes", []string{"anaphora", "contradiction"}, 6},
		{Query{Window: "1h"}, "26", "21", "38.1%", "last hour: only since rein started at 2026-03-01 09:00:00Z (20m0s ago)", []string{"anaphora", "contradiction"}, 26},
		{Query{}, "26", "21", "38.1%", "since rein started", []string{"anaphora", "contradiction"}, 26},
	} {
		t.Run(tc.q.Window+"/"+tc.q.Tenant+"/"+tc.q.ErrorType, func(t *testing.T) {
			o := c.overview(t, tc.q)
			if o.Decisions.Text != tc.decisions || o.Judged.Text != tc.judged || o.ActivationRate.Text != tc.rate {
				t.Errorf("decisions %s judged %s rate %s, want %s %s %s", o.Decisions.Text, o.Judged.Text, o.ActivationRate.Text, tc.decisions, tc.judged, tc.rate)
			}
			if !strings.Contains(o.Coverage, tc.coverage) {
				t.Errorf("coverage %q, want it to contain %q", o.Coverage, tc.coverage)
			}
			var types []string
			for _, s := range o.ErrorTypes {
				types = append(types, s.Name)
			}
			slices.Sort(types)
			if !slices.Equal(types, tc.types) {
				t.Errorf("error types %v, want %v", types, tc.types)
			}
			var sum float64
			fields := strings.Fields(o.Trend.DecisionsText)
			for _, f := range fields {
				n, err := strconv.ParseFloat(f, 64)
				if err != nil {
					t.Fatal(err)
				}
				sum += n
			}
			if len(fields) != trendPoints || sum != tc.trendSum || len(strings.Fields(o.Trend.Decisions)) != trendPoints {
				t.Errorf("trend %q (%d points), sum %g, want %d points summing to %g", o.Trend.DecisionsText, len(fields), sum, trendPoints, tc.trendSum)
			}
			current := 0
			for _, w := range o.Windows {
				if w.Current {
					current++
					if want := cmpOr(tc.q.Window, WindowAll); w.Name != want {
						t.Errorf("current window %s, want %s", w.Name, want)
					}
				}
				if tc.q.Tenant != "" && !strings.Contains(w.URL, "tenant="+tc.q.Tenant) || tc.q.ErrorType != "" && !strings.Contains(w.URL, "type="+tc.q.ErrorType) {
					t.Errorf("window link %s drops a filter", w.URL)
				}
			}
			if current != 1 {
				t.Errorf("%d current windows", current)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// The history keeps what the longest window needs, at most one sample per
// minimum gap, however often it is asked.
func TestHistoryBounded(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	h := newHistory(t0, 5*time.Second)
	for i := range 3 * 3600 {
		h.add(sample{at: t0.Add(time.Duration(i) * time.Second), mv: newMetricsView()})
	}
	if n := len(h.samples); n > 3600/5+5 {
		t.Errorf("%d samples kept", n)
	}
	end := t0.Add(3*time.Hour - time.Second)
	if _, ok := h.at(end.Add(-time.Hour)); !ok {
		t.Error("the baseline of the last hour was forgotten")
	}
}

// A banner appears when dead letters are added (not for those already
// there when the dashboard started) and while a model endpoint's breaker
// is open; it goes once the alarm window has passed or the model is back.
func TestAlarms(t *testing.T) {
	f := newFixture(t)
	c := newClocked(t, f)
	t0 := c.now
	kinds := func(o *Overview) []string {
		var k []string
		for _, a := range o.Alarms {
			k = append(k, a.Kind)
		}
		return k
	}
	if o := c.overview(t, Query{}); len(o.Alarms) != 0 || o.DeadLetters.Text != "1" {
		t.Fatalf("alarms at start %v (dead letters %s): the old dead letter is not news", o.Alarms, o.DeadLetters.Text)
	}
	ctx := context.Background()
	if err := streams.PublishDeadLetter(ctx, f.pub, bus.StageDetector, bus.StreamTurns, 8, 1,
		bus.TurnSubject(tenant, "conv-8", schemas.RoleUser), nil, []byte("{"), "undecodable: not a CloudEvent"); err != nil {
		t.Fatal(err)
	}
	c.model.WithLabelValues("inception").Set(0)
	c.model.WithLabelValues("agent").Set(1)
	c.now = t0.Add(time.Minute)
	o := c.overview(t, Query{})
	if got := kinds(o); !slices.Equal(got, []string{"dead_letters", "model_unavailable"}) {
		t.Fatalf("alarms %v", o.Alarms)
	}
	if !strings.Contains(o.Alarms[0].Text, "1 new dead letter(s)") || !strings.Contains(o.Alarms[1].Text, `"inception"`) {
		t.Errorf("alarm texts %q", o.Alarms)
	}
	c.model.WithLabelValues("inception").Set(1)
	c.now = t0.Add(2 * time.Hour)
	if o := c.overview(t, Query{}); len(o.Alarms) != 0 {
		t.Errorf("alarms after the window and the model's return: %v", o.Alarms)
	}
}

// Decisions made since the last sample show in the last bucket, whatever
// the rounding of the bucket width.
func TestTrendLastBucketEndsNow(t *testing.T) {
	c := newClocked(t, newFixture(t))
	c.d.sample(context.Background()) // as Run does at start
	// Too soon after it for the history to keep the next sample, and not
	// a multiple of 12.
	c.now = c.now.Add(3*time.Second + 7*time.Nanosecond)
	c.add("a", "clear", "", 12)
	// A real clock moves between the overview's "now" and its sample.
	ticks := 0
	c.d.now = func() time.Time { ticks++; return c.now.Add(time.Duration(ticks) * time.Millisecond) }
	o := c.overview(t, Query{})
	fields := strings.Fields(o.Trend.DecisionsText)
	if len(fields) != trendPoints || fields[trendPoints-1] != "12" {
		t.Errorf("trend %q: the last bucket misses the decisions", o.Trend.DecisionsText)
	}
	if o.Trend.Rate == "" {
		t.Error("no activation-rate point although decisions were judged")
	}
}

// Run samples at once, so dead letters added before the first page load
// still raise the banner.
func TestRunSamplesAtStart(t *testing.T) {
	f := newFixture(t)
	c := newClocked(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.d.Run(ctx) }()
	rtest.CheckFor(t, 10*time.Second, "Run's first sample", func() bool {
		_, _, ok := c.d.hist.firstDLQ()
		return ok
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := streams.PublishDeadLetter(context.Background(), f.pub, bus.StageDetector, bus.StreamTurns, 8, 1,
		bus.TurnSubject(tenant, "conv-8", schemas.RoleUser), nil, []byte("{"), "undecodable: not a CloudEvent"); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(time.Minute)
	if o := c.overview(t, Query{}); len(o.Alarms) != 1 || o.Alarms[0].Kind != "dead_letters" {
		t.Errorf("alarms %v", o.Alarms)
	}
}
