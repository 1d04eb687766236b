package escalation

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/streams"
)

// DurableHandoffDesktops is the one durable pull consumer through which
// human-agent desktops claim handoff items. A work-queue stream allows one
// consumer per subject, so every desktop shares it.
// (To move into streams/names.go with the rest of the NATS names.)
const DurableHandoffDesktops = "handoff-desktops"

// handoffDuplicates is the Nats-Msg-Id window of REIN_HANDOFF: a redelivered
// escalation within it never makes a second item.
const handoffDuplicates = time.Hour

// EnsureHandoffStream creates or updates the work-queue stream REIN_HANDOFF
// (items and timeout events) and the desktops' durable consumer. It is
// idempotent. replicas < 1 means 1.
func EnsureHandoffStream(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.Stream, error) {
	if replicas < 1 {
		replicas = 1
	}
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        streams.StreamHandoff,
		Description: "Escalations waiting for a human agent, and handoff timeouts.",
		Subjects:    []string{streams.HandoffItems, streams.HandoffTimeout},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  handoffDuplicates,
	})
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", streams.StreamHandoff, err)
	}
	if _, err := ensureDesktopConsumer(ctx, s, replicas); err != nil {
		return nil, err
	}
	return s, nil
}

// ensureDesktopConsumer creates or updates the desktops' durable consumer.
func ensureDesktopConsumer(ctx context.Context, s jetstream.Stream, replicas int) (jetstream.Consumer, error) {
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       DurableHandoffDesktops,
		Description:   "Human-agent desktops claiming handoff items.",
		FilterSubject: streams.HandoffItems,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		Replicas:      replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("ensure consumer %s on %s: %w", DurableHandoffDesktops, streams.StreamHandoff, err)
	}
	return c, nil
}
