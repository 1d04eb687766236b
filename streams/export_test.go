package streams

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
)

// SetIngressPublish replaces how the ingress stores a checked turn, so a
// test can hold one tenant's requests as a stalled JetStream would.
func SetIngressPublish(in *Ingress, f func(context.Context, *Publisher, *nats.Msg) (TurnResult, error)) {
	in.publish = func(ctx context.Context, pub *Publisher, m *nats.Msg, _ Decoded) (TurnResult, error) {
		return f(ctx, pub, m)
	}
}

// HijackedCounter is the publisher's rein_publish_id_conflicts_total of stream.
func (p *Publisher) HijackedCounter(stream string) prometheus.Counter {
	return p.hijacked.WithLabelValues(stream)
}
