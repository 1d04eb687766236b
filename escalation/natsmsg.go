package escalation

import (
	"bytes"
	"context"
	"fmt"

	cejs "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/streams"
)

// natsMsg encodes ev in CloudEvents binary mode (ce-* headers, data as the
// body) as the sdk-go NATS binding does, with ev's id as Nats-Msg-Id.
func natsMsg(ctx context.Context, subject string, ev cloudevents.Event) (*nats.Msg, error) {
	var body bytes.Buffer
	hdr, err := cejs.WriteMsg(binding.WithForceBinary(ctx), binding.ToMessage(&ev), &body)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", ev.Type(), ev.ID(), err)
	}
	if hdr == nil {
		hdr = nats.Header{}
	}
	hdr.Set(streams.HeaderMsgID, ev.ID())
	return &nats.Msg{Subject: subject, Header: hdr, Data: body.Bytes()}, nil
}
