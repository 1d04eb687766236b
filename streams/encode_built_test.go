package streams

import (
	"errors"
	"reflect"
	"testing"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// builtCorpus is stage outputs of every kind Build makes: each type's
// payload, a traceparent or none, a turn past int32, a source of the
// ingress's kind and one with every URL part, and attributes a setter
// would change (the published header then comes from the event).
func builtCorpus(t *testing.T) map[string]schemas.Built {
	t.Helper()
	m := schemas.Meta{Tenant: "acme", Conversation: "c-42", Turn: 7}
	traced := m
	traced.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	big := m
	big.Turn = schemas.MaxTurn
	first := m
	first.Turn = 0
	out := map[string]schemas.Built{}
	for _, c := range []struct {
		name, typ, id, source string
		m                     schemas.Meta
		data                  any
	}{
		{"step", schemas.TypeStep, "step.acme.c-42.7.2", "", m, schemas.Step{Turn: 7, Step: 2, Kind: "tool_call", Name: "get_reservation_details", Arguments: []byte(`{"reservation_id":"Q7RM2K"}`)}},
		{"reply", schemas.TypeTurn, "turn.acme.c-42.7-agent", "", traced, schemas.Turn{Role: schemas.RoleAgent, Text: "Done — \"Q7RM2K\" <ok> \u2028", Turn: 7}},
		{"task past int32", schemas.TypeTask, "task.acme.c-42.x", "", big, schemas.Task{Turn: schemas.MaxTurn, UserText: "hello"}},
		{"detection turn 0", schemas.TypeDetection, "detection.acme.c-42.0", "/ingress", first, schemas.Detection{Rein: true, ErrorType: "anaphora", Category: "ambiguous"}},
		{"source with parts", schemas.TypeTurn, "x", "https://user@example.test:8080/p?q=1#f", m, schemas.Turn{Role: schemas.RoleUser, Text: "hi", Turn: 7}},
		{"padded id", schemas.TypeTurn, " x ", "", m, schemas.Turn{Role: schemas.RoleUser, Text: "hi", Turn: 7}},
		{"bad source", schemas.TypeTurn, "x", "%zz", m, schemas.Turn{Role: schemas.RoleUser, Text: "hi", Turn: 7}},
	} {
		b, err := schemas.Build(c.typ, c.id, c.source, c.m, c.data)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out[c.name] = b
	}
	return out
}

// A Built output is published as the same message, header for header and
// byte for byte, as the CloudEvent BuildEvent would have made of it, under
// a span's traceparent or not, to a stream or not.
func TestBuiltEncodesAsItsEvent(t *testing.T) {
	subject := bus.StepSubject("acme", "c-42")
	for name, bt := range builtCorpus(t) {
		for _, tp := range []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
			for _, stream := range []string{"", bus.StreamSteps} {
				bt := bt
				ev := bt.Event()
				var want, got msgBuf
				if err := encodeOut(&want, Out{Stream: stream, Subject: subject, Event: &ev}, tp); err != nil {
					t.Fatal(err)
				}
				if err := encodeOut(&got, Out{Stream: stream, Subject: subject, Built: &bt}, tp); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.msg.Header, want.msg.Header) {
					t.Errorf("%s (traceparent %q, stream %q): header\n got %v\nwant %v", name, tp, stream, got.msg.Header, want.msg.Header)
				}
				if got.msg.Subject != want.msg.Subject || string(got.msg.Data) != string(want.msg.Data) {
					t.Errorf("%s: message %q %q, want %q %q", name, got.msg.Subject, got.msg.Data, want.msg.Subject, want.msg.Data)
				}
				// The reference is sdk-go's own binding.
				sdk, err := sdkEncode(subject, &ev)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range sdk.Header {
					if !reflect.DeepEqual(got.msg.Header[k], v) {
						t.Errorf("%s: %s = %v, sdk-go writes %v", name, k, got.msg.Header[k], v)
					}
				}
				// And reading it back gives the event's metadata and data
				// (an event whose source does not parse has none: it is not
				// one to read).
				if name == "bad source" {
					continue
				}
				d, err := DecodeEnvelope(subject, got.msg.Header, got.msg.Data, 0)
				if err != nil {
					t.Fatalf("%s: decode: %v", name, err)
				}
				wantMeta := bt.Meta
				if tp != "" {
					wantMeta.Traceparent = tp
				}
				if d.Meta != wantMeta || d.Event.ID() != ev.ID() || !d.Event.Time().Equal(bt.Time) || string(d.Event.Data()) != string(bt.Data) {
					t.Errorf("%s: read back %+v %q %v, want %+v %q %v", name, d.Meta, d.Event.ID(), d.Event.Time(), wantMeta, ev.ID(), bt.Time)
				}
			}
		}
	}
}

// An output with neither an event nor a built one is refused, not
// published empty.
func TestOutWithoutAnEventIsRefused(t *testing.T) {
	var b msgBuf
	if err := encodeOut(&b, Out{Stream: bus.StreamSteps, Subject: "rein.steps.acme.c-42"}, ""); !errors.Is(err, ErrPermanent) {
		t.Errorf("err = %v, want a permanent error", err)
	}
}
