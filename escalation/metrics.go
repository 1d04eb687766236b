package escalation

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
)

// Metrics are the escalation stage's and its sinks' Prometheus collectors.
// The sinks use the Sink* and HandoffTimeouts members; the stage uses
// Escalations and Reports. One Metrics is shared by the stage and all sinks.
type Metrics struct {
	Escalations     *prometheus.CounterVec   // rein_escalations_total{reason,error_type}
	Reports         *prometheus.CounterVec   // rein_reports_total{error_type}
	SinkDeliveries  *prometheus.CounterVec   // rein_sink_deliveries_total{sink,kind,outcome}
	SinkSeconds     *prometheus.HistogramVec // rein_sink_delivery_seconds{sink,kind}
	HandoffTimeouts prometheus.Counter       // rein_handoff_timeouts_total
	Unanswered      *prometheus.CounterVec   // rein_unanswered_total{reason}
}

// NoErrorType is the error_type label value of events that carry none.
const NoErrorType = "none"

// NewMetrics creates the collectors and registers them on reg. Registering
// twice on the same registry returns collectors bound to the first
// registration (telemetry.Register), so the stage and BuildSinks may both
// call it. A nil reg registers nowhere (the metrics still count, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		Escalations: telemetry.NewCounterVec(reg, telemetry.MEscalations,
			"Escalations to a human agent handled by the escalation stage, by reason and detected error type.", "reason", "error_type"),
		Reports: telemetry.NewCounterVec(reg, telemetry.MReports,
			"Ambiguity reports handled by the escalation stage, by detected error type.", "error_type"),
		SinkDeliveries: telemetry.NewCounterVec(reg, telemetry.MSinkDeliveries,
			"Sink delivery attempts and results by sink instance and kind: delivered, retry (an attempt failed, another follows), failed (dead-lettered), skipped.", "sink", "kind", "outcome"),
		SinkSeconds: telemetry.NewHistogramVec(reg, telemetry.MSinkDeliverySeconds,
			"Time for a sink to take one event, retries included, by sink instance and kind.", prometheus.ExponentialBuckets(0.001, 4, 10), "sink", "kind"),
		HandoffTimeouts: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: telemetry.MHandoffTimeouts,
			Help: "Handoff items nobody claimed before their deadline (each emitted dev.rein.handoff.timeout.v1).",
		})),
		Unanswered: telemetry.NewCounterVec(reg, telemetry.MUnanswered,
			"User turns the agent did not answer, delivered by the escalation stage, by reason (superseded, failed, human_path).", "reason"),
	}
}

// ObserveEscalation counts one escalation.
func (m *Metrics) ObserveEscalation(reason, errorType string) {
	m.Escalations.WithLabelValues(orNone(reason), orNone(errorType)).Inc()
}

// ObserveReport counts one ambiguity report.
func (m *Metrics) ObserveReport(errorType string) {
	m.Reports.WithLabelValues(orNone(errorType)).Inc()
}

// ObserveUnanswered counts one unanswered record. The reason is one of the
// schema's (the payload was validated); anything else counts as "other".
func (m *Metrics) ObserveUnanswered(reason string) {
	switch reason {
	case schemas.UnansweredSuperseded, schemas.UnansweredFailed, schemas.UnansweredHumanPath:
	default:
		reason = "other"
	}
	m.Unanswered.WithLabelValues(reason).Inc()
}

// delivery counts one outcome of the sink instance name of the given kind.
// Both labels are bounded by the configuration: names are configured (or
// defaulted from the kind), kinds are the three constants.
func (m *Metrics) delivery(name, kind, outcome string) {
	m.SinkDeliveries.WithLabelValues(name, kind, outcome).Inc()
}

// observe records how long the sink instance took to take one event.
func (m *Metrics) observe(name, kind string, d time.Duration) {
	m.SinkSeconds.WithLabelValues(name, kind).Observe(d.Seconds())
}

func orNone(s string) string {
	if s == "" {
		return NoErrorType
	}
	return s
}
