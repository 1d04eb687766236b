package detector

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/llmmodule"
	"github.com/reinception/rein/internal/telemetry"
)

// Gated is implemented by modules that send only some turns to a model
// (the cascade); the stage exports their counts as rein_detector_gate_total.
type Gated interface {
	Stats() llmmodule.CascadeStats
}

type stageMetrics struct {
	decisions   *prometheus.CounterVec
	activations *prometheus.CounterVec
	arms        *prometheus.CounterVec // decisions per experiment arm
	inception   prometheus.Observer
	fetches     prometheus.Counter // reads of agent replies
	repeats     *prometheus.CounterVec
	// unjudged counts user turns acked without asking the module, by
	// reason (the Unjudged* constants).
	unjudged map[string]prometheus.Counter

	mu      sync.Mutex
	tenants telemetry.TenantLabels
}

func newStageMetrics(reg prometheus.Registerer, m inception.Module) *stageMetrics {
	sm := &stageMetrics{
		decisions: telemetry.NewCounterVec(reg, telemetry.MDetectorDecisions,
			"Detections by outcome (activated, clear, failed), per tenant.", "tenant", "outcome"),
		activations: telemetry.NewCounterVec(reg, telemetry.MDetectorActivations,
			"Activations by detected error type, per tenant.", "tenant", "error_type"),
		arms: telemetry.NewCounterVec(reg, telemetry.MExperimentDecisions,
			"Detections of conversations in a holdout experiment, by arm (treatment, control) and outcome (activated, clear, failed), per tenant.", "tenant", "arm", "outcome"),
		inception: telemetry.NewHistogramVec(reg, telemetry.MDetectorInceptionSeconds,
			"Time the inception module took per user turn.", telemetry.LatencyBuckets, "module").WithLabelValues(m.Name()),
		repeats: telemetry.NewCounterVec(reg, telemetry.MDetectorRepeats,
			"Activations not planted because the same error type was planted at the conversation's turn before.", "error_type"),
		fetches: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: telemetry.MDetectorContextFetches,
			Help: "Reads of agent replies (batched direct gets) that bring a conversation's surface context up to date."})),
	}
	unjudged := telemetry.NewCounterVec(reg, telemetry.MDetectorUnjudged,
		"User turns acked without asking the inception module: their stored detection was handed on (handed_on), or a platform sent a judged turn again (sent_again). Turns whose outputs are all stored are the consume loop's rein_stage_messages_total{outcome=\"stored\"}.", "reason")
	sm.unjudged = map[string]prometheus.Counter{}
	for _, r := range []string{UnjudgedHandedOn, UnjudgedSentAgain} {
		sm.unjudged[r] = unjudged.WithLabelValues(r)
	}
	if _, ok := inception.Current(m).(Gated); ok && reg != nil {
		telemetry.Register(reg, &gateCollector{m: m, desc: prometheus.NewDesc(telemetry.MDetectorGate,
			"Turns the cascade's rules gate passed to the model or skipped.", []string{"result"}, nil)})
	}
	return sm
}

// Reasons of rein_detector_unjudged_turns_total.
const (
	UnjudgedHandedOn  = "handed_on"  // its stored detection handed on to the task
	UnjudgedSentAgain = "sent_again" // a platform's retry of a judged turn
)

// tenant bounds the tenant label: the first MaxTenantLabels tenants keep
// their name, later ones share OtherTenant.
func (m *stageMetrics) tenant(t string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tenants.Label(t)
}

// gateCollector reads the module in place at each scrape: a promoted
// model's cascade shares the counters (llmmodule.Cascade.WithGate).
type gateCollector struct {
	m    inception.Module
	desc *prometheus.Desc
}

func (c *gateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *gateCollector) Collect(ch chan<- prometheus.Metric) {
	g, ok := inception.Current(c.m).(Gated)
	if !ok {
		return
	}
	st := g.Stats()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(st.Passed), llmmodule.GatePass)
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(st.Turns-st.Passed), llmmodule.GateSkip)
}
