package dashboard

import (
	"fmt"
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/reinception/rein/internal/telemetry"
)

// The latency panel reads the same histograms /metrics serves, one series
// per stage, inception module, model purpose and the agent's turn, and
// gives each window's p50 and p99 the way Prometheus' histogram_quantile
// does (linear within the bucket the rank falls in). A window's histogram
// is the buckets now minus the buckets at its start, like every count.

// latencySeries says which histograms the panel shows and how each series
// is named: the family and the label that tells its series apart.
var latencySeries = map[string]string{
	telemetry.MStageHandleSeconds:       "stage",
	telemetry.MDetectorInceptionSeconds: "module",
	telemetry.MModelRequestSeconds:      "purpose",
	telemetry.MAgentWorkerTurnSeconds:   "",
}

// histo is one histogram series: cumulative counts per upper bound.
type histo struct {
	bounds []float64 // upper bounds, ascending, +Inf excluded
	counts []float64 // cumulative count at each bound
	total  float64   // observations (the +Inf bucket)
}

func histoOf(h *dto.Histogram) histo {
	out := histo{total: float64(h.GetSampleCount())}
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.counts = append(out.counts, float64(b.GetCumulativeCount()))
	}
	return out
}

// plus and minus combine series of the same buckets; a series whose
// buckets differ (a restart with other buckets) is taken as it is.
func (h histo) plus(o histo) histo {
	if !slices.Equal(h.bounds, o.bounds) {
		if h.total == 0 {
			return o
		}
		return h
	}
	out := histo{bounds: h.bounds, counts: slices.Clone(h.counts), total: h.total + o.total}
	for i := range out.counts {
		out.counts[i] += o.counts[i]
	}
	return out
}

func (h histo) minus(o histo) histo {
	if !slices.Equal(h.bounds, o.bounds) || o.total > h.total {
		return h
	}
	out := histo{bounds: h.bounds, counts: slices.Clone(h.counts), total: h.total - o.total}
	for i := range out.counts {
		out.counts[i] = max(0, out.counts[i]-o.counts[i])
	}
	return out
}

// quantile is histogram_quantile(q): the bucket holding rank q·total, and
// a linear guess inside it (from 0 for the first bucket). Past the last
// finite bound it answers that bound, as Prometheus does. NaN when empty.
func (h histo) quantile(q float64) float64 {
	if h.total == 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.total
	lower, below := 0.0, 0.0
	for i, ub := range h.bounds {
		if h.counts[i] >= rank {
			in := h.counts[i] - below
			if in <= 0 {
				return ub
			}
			return lower + (ub-lower)*(rank-below)/in
		}
		lower, below = ub, h.counts[i]
	}
	return h.bounds[len(h.bounds)-1]
}

// Latency is one series' quantiles over the window.
type Latency struct {
	Series string `json:"series"` // e.g. "stage detector", "model agent"
	Count  Count  `json:"count"`  // observations in the window
	P50    Count  `json:"p50"`    // seconds, text "12 ms"
	P99    Count  `json:"p99"`
}

// latencyKey names a series for display: the family's short name and its
// label's value.
func latencyKey(family string, m *dto.Metric) (string, bool) {
	label, ok := latencySeries[family]
	if !ok {
		return "", false
	}
	name := map[string]string{
		telemetry.MStageHandleSeconds:       "stage",
		telemetry.MDetectorInceptionSeconds: "inception",
		telemetry.MModelRequestSeconds:      "model",
		telemetry.MAgentWorkerTurnSeconds:   "agent turn",
	}[family]
	if label == "" {
		return name, true
	}
	for _, l := range m.GetLabel() {
		if l.GetName() == label {
			return name + " " + l.GetValue(), true
		}
	}
	return name, true
}

// latencies turns a view's histograms into the panel's rows, sorted by
// series name; series without observations in the window are left out.
func (v metricsView) latencies() []Latency {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range v.latency {
			if !yield(k) {
				return
			}
		}
	})
	var out []Latency
	for _, k := range keys {
		h := v.latency[k]
		if h.total == 0 {
			continue
		}
		out = append(out, Latency{Series: k, Count: count("observations", h.total),
			P50: seconds(h.quantile(0.5)), P99: seconds(h.quantile(0.99))})
	}
	return out
}

// seconds is a duration in seconds with its text.
func seconds(s float64) Count {
	if math.IsNaN(s) {
		return Count{Text: "n/a"}
	}
	return Count{Value: s, Text: durationText(time.Duration(s * float64(time.Second)))}
}

func durationText(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
