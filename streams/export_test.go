package streams

import (
	"context"

	"github.com/nats-io/nats.go"
)

// SetIngressPublish replaces how the ingress stores a checked turn, so a
// test can hold one tenant's requests as a stalled JetStream would.
func SetIngressPublish(in *Ingress, f func(context.Context, *Publisher, *nats.Msg) (TurnResult, error)) {
	in.publish = f
}
