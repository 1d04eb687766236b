package streams

import (
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// benchTurn is a typical pipeline event: a user turn with a traceparent.
func benchTurn(b *testing.B) *event.Event {
	b.Helper()
	m := schemas.Meta{Tenant: "acme", Conversation: "c-42", Turn: 7, Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", m.Tenant, m.Conversation, m.Turn)+"-user", "/ingress", m,
		schemas.Turn{Role: schemas.RoleUser, Text: "I'd like to cancel the second reservation, the one in May.", Turn: m.Turn})
	if err != nil {
		b.Fatal(err)
	}
	ev.SetTime(time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC))
	return &ev
}

func BenchmarkEncode(b *testing.B) {
	ev := benchTurn(b)
	subject := bus.TurnSubject("acme", "c-42", schemas.RoleUser)
	for _, c := range []struct {
		name   string
		encode func(string, *event.Event) (*nats.Msg, error)
	}{{"sdk-go", sdkEncode}, {"direct", Encode}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.encode(subject, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode times reading the CloudEvent alone (event/…) and the whole
// of Decode, whose schema validation costs the same on both paths.
func BenchmarkDecode(b *testing.B) {
	ev := benchTurn(b)
	msg, err := sdkEncode(bus.TurnSubject("acme", "c-42", schemas.RoleUser), ev)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		read func(string, nats.Header, []byte) (*event.Event, error)
	}{{"sdk-go", sdkToEvent}, {"direct", toEvent}} {
		b.Run("event/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.read(msg.Subject, msg.Header, msg.Data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Decode/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decode(msg.Subject, msg.Header, msg.Data, 0, c.read); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodePublished times what the Publisher spends on each message
// before the client has it: a stage's output built, encoded with the
// expected stream, and its buffers handed back as after an
// acknowledgement. event: built as a CloudEvent (BuildEvent); built: as
// a schemas.Built, its headers written from its fields (Out.Built).
func BenchmarkEncodePublished(b *testing.B) {
	m := schemas.Meta{Tenant: "acme", Conversation: "c-42", Turn: 7}
	step := schemas.Step{Turn: 7, Step: 2, Kind: "tool_call", Name: "get_reservation_details", Arguments: []byte(`{"reservation_id":"Q7RM2K"}`)}
	subject := bus.StepSubject("acme", "c-42")
	const id = "step.acme.c-42.7.2"
	b.Run("event", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ev, err := schemas.BuildEvent(schemas.TypeStep, id, "", m, step)
			if err != nil {
				b.Fatal(err)
			}
			buf := pooledMsg()
			if err := encodeOut(buf, Out{Stream: bus.StreamSteps, Subject: subject, Event: &ev}, ""); err != nil {
				b.Fatal(err)
			}
			buf.release()
		}
	})
	b.Run("built", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bt, err := schemas.Build(schemas.TypeStep, id, "", m, step)
			if err != nil {
				b.Fatal(err)
			}
			buf := pooledMsg()
			if err := encodeOut(buf, Out{Stream: bus.StreamSteps, Subject: subject, Built: &bt}, ""); err != nil {
				b.Fatal(err)
			}
			buf.release()
		}
	})
}
