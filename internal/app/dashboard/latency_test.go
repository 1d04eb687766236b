package dashboard

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// TestHistogramQuantileLikePrometheus: p50 and p99 as histogram_quantile
// gives them, computed by hand: 50 observations under 10 ms, 40 under
// 100 ms, 10 under 1 s.
func TestHistogramQuantileLikePrometheus(t *testing.T) {
	h := histo{bounds: []float64{0.01, 0.1, 1}, counts: []float64{50, 90, 100}, total: 100}
	// rank 50 falls at the top of the first bucket: 0 + 0.01·50/50.
	if got := h.quantile(0.5); math.Abs(got-0.01) > 1e-12 {
		t.Errorf("p50 %v, want 0.01", got)
	}
	// rank 99 is the 9th of the 10 in (0.1, 1]: 0.1 + 0.9·9/10.
	if got := h.quantile(0.99); math.Abs(got-0.91) > 1e-12 {
		t.Errorf("p99 %v, want 0.91", got)
	}
	// Past the last finite bound: that bound.
	over := histo{bounds: []float64{0.01}, counts: []float64{0}, total: 5}
	if got := over.quantile(0.5); got != 0.01 {
		t.Errorf("all above the last bound: %v, want 0.01", got)
	}
	if got := (histo{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("empty: %v, want NaN", got)
	}
}

// TestLatencyPanelCoversTheWindow: a window's quantiles come from the
// observations made in it (the histogram now minus at the window's start),
// not from everything since the process started.
func TestLatencyPanelCoversTheWindow(t *testing.T) {
	reg := prometheus.NewRegistry()
	handle := telemetry.NewHistogramVec(reg, telemetry.MStageHandleSeconds, "h", []float64{0.01, 0.1, 1}, "stage")
	turn := telemetry.NewHistogramVec(reg, telemetry.MAgentWorkerTurnSeconds, "t", []float64{0.01, 0.1, 1})
	for range 100 {
		handle.WithLabelValues("detector").Observe(0.005)
	}
	turn.WithLabelValues().Observe(0.05)
	base, err := readMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		handle.WithLabelValues("detector").Observe(0.5)
	}
	cur, err := readMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	all := cur.latencies()
	if len(all) != 2 || all[0].Series != "agent turn" || all[1].Series != "stage detector" || all[1].Count.Value != 110 {
		t.Fatalf("since the start: %+v", all)
	}
	// 110 observations: the median is in the first bucket.
	if all[1].P50.Value >= 0.01 {
		t.Errorf("p50 since the start %v, want under 10 ms", all[1].P50.Value)
	}
	win := cur.sub(base).latencies()
	// The agent turn saw nothing in the window: no row.
	if len(win) != 1 || win[0].Series != "stage detector" || win[0].Count.Value != 10 {
		t.Fatalf("window: %+v", win)
	}
	// 10 observations in (0.1, 1]: p50 = 0.1 + 0.9·5/10.
	if math.Abs(win[0].P50.Value-0.55) > 1e-9 || win[0].P50.Text != "550 ms" {
		t.Errorf("window p50 %+v, want 0.55 s as 550 ms", win[0].P50)
	}
}

// The overview page and its JSON carry the panel.
func TestOverviewShowsLatency(t *testing.T) {
	f := newFixture(t)
	h := telemetry.NewHistogramVec(f.reg, telemetry.MStageHandleSeconds, "h", []float64{0.01, 0.1, 1}, "stage")
	h.WithLabelValues("agentworker").Observe(0.05)
	_, srv := f.serve(t, Config{})
	_, body := get(t, srv.URL+"/api/overview")
	var o Overview
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Latency) != 1 || o.Latency[0].Series != "stage agentworker" || o.Latency[0].P99.Text == "" {
		t.Fatalf("latency %+v", o.Latency)
	}
	_, page := get(t, srv.URL+"/")
	if !strings.Contains(page, `data-series="stage agentworker"`) {
		t.Error("the page has no latency row for stage agentworker")
	}
}

// TestRecentConversationsIncludeCleanOnes: the overview lists every
// conversation's latest decision from REIN_DETECTIONS, a clean one too
// (before, a conversation rein never acted on appeared nowhere), and the
// outcome filter narrows the list.
func TestRecentConversationsIncludeCleanOnes(t *testing.T) {
	f := newFixture(t)
	// A conversation rein never acted on.
	f.publish(t.Context(), t, streams.StreamDetections, streams.DetectionSubject(tenant, "conv-3"), schemas.TypeDetection,
		"detector-acme-conv-3-1", schemas.Meta{Tenant: tenant, Conversation: "conv-3", Turn: 1}, schemas.Detection{Turn: 1, UserText: "What is my baggage allowance?", Module: "rules", TaxonomyVersion: "1"})
	_, srv := f.serve(t, Config{})
	overview := func(query string) Overview {
		t.Helper()
		res, body := get(t, srv.URL+"/api/overview"+query)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", query, res.StatusCode, body)
		}
		var o Overview
		if err := json.Unmarshal([]byte(body), &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	// The fixture's conversation was judged twice: clear at turn 1, then
	// activated at turn 2; its row is the latest.
	o := overview("?outcome=activated")
	if len(o.Conversations) != 1 || o.Conversations[0].Conversation != conv || o.Conversations[0].Turn != 2 ||
		o.Conversations[0].Outcome != "activated" || o.Conversations[0].ErrorType != "unsupported_parameter" ||
		o.Conversations[0].URL != "/conversations/acme/conv-1" {
		t.Fatalf("conversations %+v", o.Conversations)
	}
	if got := overview("?outcome=clear").Conversations; len(got) != 1 || got[0].Conversation != "conv-3" {
		t.Errorf("outcome=clear: %+v, want conv-3 alone (conv-1's latest decision activated)", got)
	}
	if got := overview("").Conversations; len(got) != 2 || got[0].Conversation != "conv-3" {
		t.Errorf("every outcome: %+v, want conv-3 (newest) and conv-1", got)
	}
	if got := overview("?outcome=activated&type=anaphora").Conversations; len(got) != 0 {
		t.Errorf("type anaphora: %+v, want none", got)
	}
	if res, _ := get(t, srv.URL+"/api/overview?outcome=maybe"); res.StatusCode != 400 {
		t.Errorf("a bad outcome: %d, want 400", res.StatusCode)
	}
	_, page := get(t, srv.URL+"/?outcome=activated")
	if !strings.Contains(page, `data-conversation="acme/conv-1"`) || !strings.Contains(page, `data-outcome-filter="activated" class="current"`) {
		t.Error("the page lacks the conversation row or the current outcome filter")
	}
}
