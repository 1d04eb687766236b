package streams

import (
	"github.com/prometheus/client_golang/prometheus"
)

// HijackedCounter is the publisher's rein_publish_id_conflicts_total of stream.
func (p *Publisher) HijackedCounter(stream string) prometheus.Counter {
	return p.hijacked.WithLabelValues(stream)
}
