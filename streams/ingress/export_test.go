package ingress

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// SetIngressPublish replaces how the ingress stores a checked turn, so a
// test can hold one tenant's requests as a stalled JetStream would.
func SetIngressPublish(in *Ingress, f func(context.Context, *streams.Publisher, *nats.Msg) (streams.TurnResult, error)) {
	in.publish = func(ctx context.Context, pub *streams.Publisher, m *nats.Msg, _ streams.Decoded, _ schemas.Turn) (streams.TurnResult, error) {
		return f(ctx, pub, m)
	}
}

// BinaryHTTPEvent is binaryHTTPEvent, for the equivalence test.
var BinaryHTTPEvent = binaryHTTPEvent
