package telemetry

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// JetStreamCollector samples stream and consumer state at scrape time, so
// operators see consumer lag and a stalled consumer (ack-pending at its
// limit) without rein keeping its own counters of them.
type JetStreamCollector struct {
	js      jetstream.JetStream
	streams []string
	timeout time.Duration

	msgs, bytes, pending, ackPending, maxAckPending, redelivered *prometheus.Desc
}

// NewJetStreamCollector samples the named streams and all their consumers.
func NewJetStreamCollector(js jetstream.JetStream, streams []string) *JetStreamCollector {
	sc := []string{"stream"}
	cc := []string{"stream", "consumer"}
	return &JetStreamCollector{
		js: js, streams: streams, timeout: 2 * time.Second,
		msgs:          prometheus.NewDesc(MStreamMessages, "Messages stored in a rein stream.", sc, nil),
		bytes:         prometheus.NewDesc(MStreamBytes, "Bytes stored in a rein stream.", sc, nil),
		pending:       prometheus.NewDesc(MConsumerPending, "Messages not yet delivered to a consumer (lag).", cc, nil),
		ackPending:    prometheus.NewDesc(MConsumerAckPending, "Messages delivered and not yet acknowledged.", cc, nil),
		maxAckPending: prometheus.NewDesc(MConsumerMaxAckPend, "The consumer's ack-pending limit.", cc, nil),
		redelivered:   prometheus.NewDesc(MConsumerRedelivered, "Messages redelivered and not yet acknowledged.", cc, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *JetStreamCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.msgs, c.bytes, c.pending, c.ackPending, c.maxAckPending, c.redelivered} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *JetStreamCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	for _, name := range c.streams {
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			continue
		}
		info, err := s.Info(ctx)
		if err != nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.msgs, prometheus.GaugeValue, float64(info.State.Msgs), name)
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(info.State.Bytes), name)
		lister := s.ListConsumers(ctx)
		for ci := range lister.Info() {
			if ci.Config.Durable == "" {
				continue // ephemeral readers (replay, audit) would make labels unbounded
			}
			ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(ci.NumPending), name, ci.Name)
			ch <- prometheus.MustNewConstMetric(c.ackPending, prometheus.GaugeValue, float64(ci.NumAckPending), name, ci.Name)
			ch <- prometheus.MustNewConstMetric(c.maxAckPending, prometheus.GaugeValue, float64(ci.Config.MaxAckPending), name, ci.Name)
			ch <- prometheus.MustNewConstMetric(c.redelivered, prometheus.GaugeValue, float64(ci.NumRedelivered), name, ci.Name)
		}
	}
}
