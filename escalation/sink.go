package escalation

import (
	"context"

	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// Sink delivers escalation and report events (dev.rein.escalation.v1,
// dev.rein.report.v1) to one downstream consumer. webhook and jsonl take any
// valid CloudEvent (so handoff timeouts can be routed to them too); handoff
// takes escalations and skips the rest.
//
// Deliver returns nil once the sink has taken responsibility for the event.
// An error wrapping ErrDeliveryFailed is final (the stage dead-letters the
// event); any other error is transient (the stage may redeliver). Deliver is
// safe for concurrent use. Close releases the sink; it flushes anything
// buffered.
type Sink interface {
	// Name is the sink's configured name, unique within the stage: the
	// value of the `sink` label of rein_sink_* metrics.
	Name() string
	// Kind is KindWebhook, KindJSONL or KindHandoff.
	Kind() string
	Deliver(ctx context.Context, ev cloudevents.Event) error
	Close() error
}

// Flusher is implemented by sinks that buffer (jsonl). The stage calls Flush
// after delivering a batch and before acking it, so an acked event is durable.
type Flusher interface {
	Flush() error
}

// Sink kinds: the `type` of a sink in rein.yaml, the value of the `kind`
// label of rein_sink_* metrics and the base of default sink names.
const (
	KindWebhook = "webhook"
	KindJSONL   = "jsonl"
	KindHandoff = "handoff"
)

// Outcome label values of rein_sink_deliveries_total.
const (
	OutcomeDelivered = "delivered" // the sink took the event
	OutcomeRetry     = "retry"     // one attempt failed, another follows
	OutcomeFailed    = "failed"    // given up: the event is dead-lettered
	OutcomeSkipped   = "skipped"   // the sink does not take this event type
)
