package injector

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
)

// maxErrorTypeLabels bounds the error_type label: a taxonomy is small, but
// the value comes from a model's answer.
const maxErrorTypeLabels = 64

// otherLabel is the error_type value past the bound.
const otherLabel = "_other"

type metrics struct {
	injections *prometheus.CounterVec

	mu    sync.Mutex
	types map[string]bool
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		injections: telemetry.NewCounterVec(reg, telemetry.MInjectorInjections,
			"Tasks published with an inception block, by error type.", "error_type"),
		types: map[string]bool{},
	}
}

func (m *metrics) injected(errorType string) {
	m.mu.Lock()
	if !m.types[errorType] {
		if len(m.types) >= maxErrorTypeLabels {
			errorType = otherLabel
		} else {
			m.types[errorType] = true
		}
	}
	m.mu.Unlock()
	m.injections.WithLabelValues(errorType).Inc()
}
