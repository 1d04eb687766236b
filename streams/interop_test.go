package streams_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	cejs "github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// A platform built on sdk-go's official nats_jetstream protocol publishes a
// turn; rein's consume loop accepts it.
func TestSDKGoClientPublishesTurnReinAccepts(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	sender, err := cejs.NewSenderFromConn(h.Conn, bus.StreamTurns, bus.TurnSubject("acme", "sdk-1", schemas.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := cloudevents.NewClient(sender)
	if err != nil {
		t.Fatal(err)
	}
	ev := cloudevents.NewEvent()
	ev.SetID("platform-42")
	ev.SetSource("/contact-center")
	ev.SetType(schemas.TypeTurn)
	ev.SetSubject("sdk-1")
	ev.SetExtension(schemas.ExtTenant, "acme")
	ev.SetExtension(schemas.ExtConversation, "sdk-1")
	ev.SetExtension(schemas.ExtTurn, 1)
	if err := ev.SetData(cloudevents.ApplicationJSON, schemas.Turn{Role: "user", Text: "book me first class", Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if res := client.Send(context.Background(), ev); cloudevents.IsUndelivered(res) {
		t.Fatalf("sdk-go send: %v", res)
	}
	var got atomic.Pointer[streams.Decoded]
	bustest.RunConsumer(t, h, consume.ConsumerConfig{}, nil, func(_ context.Context, d streams.Decoded) error {
		got.Store(&d)
		return nil
	})
	rtest.CheckFor(t, 10*time.Second, "turn consumed", func() bool { return got.Load() != nil })
	d := got.Load()
	var turn schemas.Turn
	if err := schemas.Decode(d.Event, &turn); err != nil {
		t.Fatal(err)
	}
	if d.Event.ID() != "platform-42" || d.Meta.Tenant != "acme" || d.Meta.Turn != 1 || turn.Text != "book me first class" {
		t.Errorf("decoded %+v %+v", d.Meta, turn)
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
		t.Errorf("%d dead letters", n)
	}
}

// rein publishes a detection; a consumer built on sdk-go's protocol
// receives it with every attribute and extension intact.
func TestReinEventReachesSDKGoConsumer(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	consumer, err := cejs.NewConsumerFromConn(h.Conn, bus.StreamDetections, bus.DetectionsAll, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := cloudevents.NewClient(consumer)
	if err != nil {
		t.Fatal(err)
	}
	received := make(chan cloudevents.Event, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = client.StartReceiver(ctx, func(e cloudevents.Event) { received <- e })
	}()

	det := schemas.Detection{Turn: 2, UserText: "cancel that one", Rein: true, ErrorType: "anaphora", Category: "ambiguous",
		RecoveryTool: "ambiguity_report", Evidence: "that one", Reasoning: "…", Module: "rules", TaxonomyVersion: "1"}
	id := schemas.EventID("detection", "acme", "c7", 2)
	ev, err := schemas.NewEvent(schemas.TypeDetection, id, "", schemas.Meta{Tenant: "acme", Conversation: "c7", Turn: 2}, det)
	if err != nil {
		t.Fatal(err)
	}
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	if _, err := pub.Publish(ctx, bus.StreamDetections, bus.DetectionSubject("acme", "c7"), &ev); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-received:
		if e.ID() != id || e.Type() != schemas.TypeDetection || e.Extensions()["tenant"] != "acme" || e.Subject() != "c7" {
			t.Errorf("received %s", e)
		}
		var got schemas.Detection
		if err := json.Unmarshal(e.Data(), &got); err != nil || got.ErrorType != "anaphora" {
			t.Errorf("data %+v %v", got, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sdk-go consumer received nothing")
	}
}
