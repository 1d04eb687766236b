package escalation

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
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
}

// NoErrorType is the error_type label value of events that carry none.
const NoErrorType = "none"

// NewMetrics creates the collectors and registers them on reg. Registering
// twice on the same registry returns collectors bound to the first
// registration, so the stage and BuildSinks may both call it. A nil reg
// registers nowhere (the metrics still count, for tests).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		Escalations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: telemetry.MEscalations,
			Help: "Escalations to a human agent handled by the escalation stage, by reason and detected error type.",
		}, []string{"reason", "error_type"}),
		Reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: telemetry.MReports,
			Help: "Ambiguity reports handled by the escalation stage, by detected error type.",
		}, []string{"error_type"}),
		SinkDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: telemetry.MSinkDeliveries,
			Help: "Sink delivery attempts and results by configured sink name and kind: delivered, retry (an attempt failed, another follows), failed (dead-lettered), skipped.",
		}, []string{"sink", "kind", "outcome"}),
		SinkSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    telemetry.MSinkDeliverySeconds,
			Help:    "Time for a sink to take one event, retries included, by configured sink name and kind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"sink", "kind"}),
		HandoffTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: telemetry.MHandoffTimeouts,
			Help: "Handoff items nobody claimed before their deadline (each emitted dev.rein.handoff.timeout.v1).",
		}),
	}
	var err error
	if m.Escalations, err = register(reg, m.Escalations); err != nil {
		return nil, err
	}
	if m.Reports, err = register(reg, m.Reports); err != nil {
		return nil, err
	}
	if m.SinkDeliveries, err = register(reg, m.SinkDeliveries); err != nil {
		return nil, err
	}
	if m.SinkSeconds, err = register(reg, m.SinkSeconds); err != nil {
		return nil, err
	}
	if m.HandoffTimeouts, err = register(reg, m.HandoffTimeouts); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under
// the same descriptor.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		var zero C
		return zero, fmt.Errorf("register metric: %w", err)
	}
	return c, nil
}

// ObserveEscalation counts one escalation.
func (m *Metrics) ObserveEscalation(reason, errorType string) {
	m.Escalations.WithLabelValues(orNone(reason), orNone(errorType)).Inc()
}

// ObserveReport counts one ambiguity report.
func (m *Metrics) ObserveReport(errorType string) {
	m.Reports.WithLabelValues(orNone(errorType)).Inc()
}

// delivery counts one outcome of the sink named name (a configured name:
// the label stays bounded by the configuration).
func (m *Metrics) delivery(name, kind, outcome string) {
	m.SinkDeliveries.WithLabelValues(name, kind, outcome).Inc()
}

func (m *Metrics) observe(name, kind string, d time.Duration) {
	m.SinkSeconds.WithLabelValues(name, kind).Observe(d.Seconds())
}

func orNone(s string) string {
	if s == "" {
		return NoErrorType
	}
	return s
}
