package escalation

import (
	"context"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/streams"
)

// natsMsg encodes ev in CloudEvents binary mode with its id as Nats-Msg-Id,
// through the one codec every stage uses.
func natsMsg(_ context.Context, subject string, ev cloudevents.Event) (*nats.Msg, error) {
	return streams.Encode(subject, &ev)
}
