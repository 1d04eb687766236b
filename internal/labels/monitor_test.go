package labels_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The monitor exports each tenant's measured precision, its interval and
// the labels behind it, with the floor; a tenant whose labels leave the
// window loses its series.
func TestMonitorExportsPrecisionPerTenant(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	store := func(tenant, conv, verdict string) {
		l := schemas.Label{Turn: 1, Verdict: verdict, Labeller: "ann", DetectionID: "d", Detected: true, DetectedType: "anaphora",
			Sample: &schemas.LabelSample{Day: time.Now().UTC().Format(time.DateOnly), Stratum: "anaphora", Population: 4, Probability: 0.5}}
		ev, err := schemas.NewEvent(schemas.TypeLabel, schemas.LabelMsgID(tenant, conv, 1, l), "", schemas.Meta{Tenant: tenant, Conversation: conv, Turn: 1}, l)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, bus.StreamLabels, bus.LabelSubject(tenant, conv, 1, "ann"), &ev); err != nil {
			t.Fatal(err)
		}
	}
	store("acme", "c1", schemas.VerdictCorrect)
	store("acme", "c2", schemas.VerdictFalseActivation)
	store("globex", "c1", schemas.VerdictCorrect)
	reg := prometheus.NewRegistry()
	now := time.Now()
	m, err := labels.NewMonitor(labels.MonitorConfig{Floor: 0.7}, labels.MonitorDeps{JS: h.JS, Registerer: reg, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	gauge := func(name, tenant string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, mt := range mf.GetMetric() {
				if len(mt.GetLabel()) == 0 && tenant == "" || len(mt.GetLabel()) == 1 && mt.GetLabel()[0].GetValue() == tenant {
					return mt.GetGauge().GetValue()
				}
			}
		}
		return math.NaN()
	}
	if v := gauge(telemetry.MLabelPrecision, "acme"); v != 0.5 {
		t.Errorf("acme precision %v, want 0.5", v)
	}
	if v := gauge(telemetry.MLabelPrecisionCount, "acme"); v != 2 {
		t.Errorf("acme labels %v, want 2", v)
	}
	if lo, hi := gauge(telemetry.MLabelPrecisionLower, "acme"), gauge(telemetry.MLabelPrecisionUpper, "acme"); !(lo < 0.5 && hi > 0.5) {
		t.Errorf("acme interval %v..%v", lo, hi)
	}
	if v := gauge(telemetry.MLabelPrecision, "globex"); v != 1 {
		t.Errorf("globex precision %v, want 1", v)
	}
	if v := gauge(telemetry.MLabelPrecisionFloor, ""); v != 0.7 {
		t.Errorf("floor %v", v)
	}
	now = now.Add(60 * 24 * time.Hour)
	if err := m.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, telemetry.MLabelPrecision); n != 0 {
		t.Errorf("%d precision series after the labels left the window, want 0", n)
	}
	if _, err := labels.NewMonitor(labels.MonitorConfig{Floor: 2}, labels.MonitorDeps{JS: h.JS, Registerer: prometheus.NewRegistry()}); err == nil {
		t.Error("a floor above 1 was accepted")
	}
}
