package escalation

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// EnsureHandoffStream creates or updates the work-queue stream REIN_HANDOFF
// (items and timeout events) and the desktops' durable consumer. It is
// idempotent. replicas < 1 means 1.
func EnsureHandoffStream(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.Stream, error) {
	if replicas < 1 {
		replicas = 1
	}
	// The stream is declared once, in streams' provisioning (work-queue
	// retention, a one-hour duplicate window).
	p := natsserver.DefaultProvision()
	p.Defaults.Replicas = replicas
	s, err := js.CreateOrUpdateStream(ctx, p.StreamConfig(bus.StreamHandoff))
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", bus.StreamHandoff, err)
	}
	if _, err := ensureDesktopConsumer(ctx, s, replicas); err != nil {
		return nil, err
	}
	return s, nil
}

// ensureDesktopConsumer creates or updates the desktops' durable consumer.
func ensureDesktopConsumer(ctx context.Context, s jetstream.Stream, replicas int) (jetstream.Consumer, error) {
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       bus.DurableHandoffDesktops,
		Description:   "Human-agent desktops claiming handoff items.",
		FilterSubject: bus.HandoffItems,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		Replicas:      replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("ensure consumer %s on %s: %w", bus.DurableHandoffDesktops, bus.StreamHandoff, err)
	}
	return c, nil
}
