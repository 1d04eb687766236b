package streams

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/protocol/nats_jetstream/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// DefaultMaxEventBytes is the largest event body accepted (256 KiB).
const DefaultMaxEventBytes = 256 << 10

// MaxMessageBytes is the largest message, headers and body together, that
// any rein stream stores (its max_msg_size, set in provisioning): twice the
// event limit plus 64 KiB, 576 KiB. The headroom is for the largest message
// rein writes itself, the dead letter of a full-size event: the body kept
// whole in base64 (4/3 of it), the original headers and the envelope's own
// attributes. A dead letter that would not fit keeps a bounded prefix of
// the body instead (DeadLetterPrefixBytes), so every dead letter can be
// stored; a client's message above this limit is refused by the stream and
// never stored, so it can neither be handled nor loop.
const MaxMessageBytes = 2*DefaultMaxEventBytes + 64<<10

// MaxPayloadBytes is the embedded server's max_payload, the largest message
// any client may send it at all: 1 MiB, nats-server's own default (what an
// external NATS has unless its operator changes it). It is above
// MaxMessageBytes because the conversations bucket (agent state, not
// events) takes values up to it; every stream refuses more than
// MaxMessageBytes.
const MaxPayloadBytes = 1 << 20

// Encode turns a CloudEvent into a NATS message in binary content mode:
// attributes and extensions as ce- headers, the JSON data as the body, as
// the CloudEvents NATS binding (and sdk-go's nats_jetstream protocol) do.
// The message carries Nats-Msg-Id = event id for stream de-duplication.
// The body shares the event's data bytes.
func Encode(subject string, ev *event.Event) (*nats.Msg, error) {
	b := &msgBuf{}
	if err := encodeFor(b, "", subject, ev); err != nil {
		return nil, err
	}
	return &b.msg, nil
}

// encodeFor is Encode into b's message, with the Nats-Expected-Stream
// header of stream written with the others (none when stream is ""), so
// that the publisher does not add it in an allocation of its own.
func encodeFor(b *msgBuf, stream, subject string, ev *event.Event) error {
	if binaryHeaderInto(b, ev, stream) {
		b.msg.Subject = subject
		if d := ev.Data(); len(d) > 0 {
			b.msg.Data = d
		}
		return nil
	}
	m, err := sdkEncode(subject, ev)
	if err != nil {
		return err
	}
	if stream != "" {
		m.Header.Set(jetstream.ExpectedStreamHeader, stream)
	}
	b.msg = *m
	return nil
}

// encodeOut is encodeFor of o's event, or of o.Built's headers written
// from its fields when they are plain (schemas.Built.Plain), with the
// traceparent tp when it is not "" (the extension set on the event, as
// under a span).
func encodeOut(b *msgBuf, o Out, tp string) error {
	if o.Event == nil && o.Built != nil {
		if src, ok := o.Built.Plain(); ok {
			builtHeaderInto(b, o.Built, src, tp, o.Stream)
			b.msg.Subject = o.Subject
			if len(o.Built.Data) > 0 {
				b.msg.Data = o.Built.Data
			}
			return nil
		}
		ev := o.Built.Event()
		o.Event = &ev
	}
	if o.Event == nil {
		return Permanent(fmt.Errorf("encode for %s: an output with neither an event nor a built one", o.Subject))
	}
	if tp != "" {
		o.Event.SetExtension(schemas.ExtTraceparent, tp)
	}
	return encodeFor(b, o.Stream, o.Subject, o.Event)
}

// sdkEncode is Encode through sdk-go's binding: the reference for
// binaryHeader and the path for what it declines.
func sdkEncode(subject string, ev *event.Event) (*nats.Msg, error) {
	var body bytes.Buffer
	hdr, err := nats_jetstream.WriteMsg(context.Background(), binding.ToMessage(ev), &body)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ev.Type(), err)
	}
	if hdr == nil {
		hdr = nats.Header{}
	}
	hdr.Set(bus.HeaderMsgID, ev.ID())
	return &nats.Msg{Subject: subject, Header: hdr, Data: body.Bytes()}, nil
}

// Decoded is a validated rein event with its metadata.
type Decoded struct {
	Event   *event.Event
	Meta    schemas.Meta
	Subject string
	// Sequence is the stream sequence when the event was read from a
	// stream (0 otherwise).
	Sequence uint64
	// Stored is when the stream stored it, by the server's clock, for an
	// event delivered by a consumer or read from a stream (zero otherwise).
	Stored time.Time
	// Delivered is how many times the consumer has delivered it, this time
	// included (0 when not read by a consumer): above 1, an earlier
	// delivery was not acked — a worker that stopped mid-turn, an ack
	// lost, or the ack wait passed — and some of its outputs may be stored.
	Delivered uint64
	// Outputs is what of its outputs the consume loop found stored before
	// handing it to the handler (ConsumerConfig.Stored): StoredSome, or
	// StoredNone when none are or it was not asked (a first delivery
	// within the recheck age).
	Outputs Stored
}

// Time is when the event happened (EventTime of its time and Stored).
func (d Decoded) Time() time.Time { return EventTime(d.Event.Time(), d.Stored) }

// EventTime is the one rule for an event's time wherever rein shows or
// serves it: the event's own CloudEvents time, or, for an event posted
// without one, when the stream stored it (never 0001-01-01).
func EventTime(event, stored time.Time) time.Time {
	if event.IsZero() {
		return stored
	}
	return event
}

// Payload unmarshals the event's data, which Decode has already checked
// against its type's schema, into out (schemas.UnmarshalPayload: a turn or
// a task without reflection).
func (d Decoded) Payload(out any) error {
	if err := schemas.UnmarshalPayload(d.Event.Data(), out); err != nil {
		return fmt.Errorf("%w: %v", ErrUndecodable, err)
	}
	return nil
}

// Decode turns a NATS message (binary or structured mode) into a validated
// rein event. Every failure wraps ErrUndecodable and says why: oversize,
// invalid UTF-8, not a CloudEvent, a missing attribute, an unknown type,
// bad tenant or conversation ids, a subject that disagrees with the
// extensions, or a payload that breaks its schema.
func Decode(subject string, header nats.Header, data []byte, maxBytes int) (Decoded, error) {
	return decodeWith(subject, header, data, maxBytes, toEvent, true)
}

// DecodeEnvelope is Decode without the data's JSON Schema check: for the
// ingress, which validates an offered event's data once (check) and must
// not pay for it again on the message it encoded from that event.
func DecodeEnvelope(subject string, header nats.Header, data []byte, maxBytes int) (Decoded, error) {
	return decodeWith(subject, header, data, maxBytes, toEvent, false)
}

// toEvent reads the CloudEvent of a message: binary mode 1.0 directly,
// anything binaryEvent declines through sdk-go.
func toEvent(subject string, header nats.Header, data []byte) (*event.Event, error) {
	if ev, ok := binaryEvent(header, data); ok {
		return ev, nil
	}
	return sdkToEvent(subject, header, data)
}

// sdkToEvent reads the CloudEvent of a message through sdk-go's binding:
// the reference for binaryEvent.
func sdkToEvent(subject string, header nats.Header, data []byte) (*event.Event, error) {
	return binding.ToEvent(context.Background(), nats_jetstream.NewMessage(&nats.Msg{Subject: subject, Header: header, Data: data}))
}

// decode is Decode with the step that reads the CloudEvent passed in, so
// that the tests can run the same checks on sdk-go's result.
func decode(subject string, header nats.Header, data []byte, maxBytes int,
	read func(subject string, header nats.Header, data []byte) (*event.Event, error)) (Decoded, error) {
	return decodeWith(subject, header, data, maxBytes, read, true)
}

func decodeWith(subject string, header nats.Header, data []byte, maxBytes int,
	read func(subject string, header nats.Header, data []byte) (*event.Event, error), validate bool) (Decoded, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxEventBytes
	}
	if len(data) > maxBytes {
		return Decoded{}, fmt.Errorf("%w: oversize: %d bytes exceeds the %d-byte limit", ErrUndecodable, len(data), maxBytes)
	}
	if !utf8.Valid(data) {
		return Decoded{}, fmt.Errorf("%w: body is not valid UTF-8", ErrUndecodable)
	}
	// Binary mode as nats_jetstream.NewMessage decides it.
	if header.Get(hdrSpecVersion) == "" && len(bytes.TrimSpace(data)) == 0 {
		return Decoded{}, fmt.Errorf("%w: no ce-specversion header and an empty body", ErrUndecodable)
	}
	ev, err := read(subject, header, data)
	if err != nil {
		return Decoded{}, fmt.Errorf("%w: not a CloudEvent: %v", ErrUndecodable, err)
	}
	return checkEvent(subject, ev, validate)
}

// checkEvent is what Decode checks of an event once it is read.
func checkEvent(subject string, ev *event.Event, validate bool) (Decoded, error) {
	if err := validate1(ev); err != nil {
		return Decoded{}, fmt.Errorf("%w: %v", ErrUndecodable, err)
	}
	if !schemas.Known(ev.Type()) {
		return Decoded{}, fmt.Errorf("%w: unknown event type %q", ErrUndecodable, ev.Type())
	}
	meta, err := schemas.MetaOf(ev)
	if err != nil {
		return Decoded{}, fmt.Errorf("%w: %v", ErrUndecodable, err)
	}
	if t, c, ok := SubjectIDs(subject); ok && (t != meta.Tenant || c != meta.Conversation) {
		return Decoded{}, fmt.Errorf("%w: subject %s disagrees with tenant %q / conversation %q", ErrUndecodable, subject, meta.Tenant, meta.Conversation)
	}
	if validate {
		if err := schemas.Validate(ev.Type(), ev.Data()); err != nil {
			return Decoded{}, fmt.Errorf("%w: %w", ErrUndecodable, err)
		}
	}
	return Decoded{Event: ev, Meta: meta, Subject: subject}, nil
}

// EncodeChecked is Encode and then DecodeEnvelope of the message, for the
// ingress, which stores what a consumer will take. An event that reading
// its message back would give unchanged (readsBack) is checked as it is,
// not read again: one decode per hop.
func EncodeChecked(subject string, ev *event.Event, maxBytes int) (*nats.Msg, Decoded, error) {
	msg, err := Encode(subject, ev)
	if err != nil {
		return nil, Decoded{}, err
	}
	if !readsBack(ev) {
		d, err := DecodeEnvelope(msg.Subject, msg.Header, msg.Data, maxBytes)
		return msg, d, err
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxEventBytes
	}
	data := ev.Data()
	if len(data) > maxBytes {
		return nil, Decoded{}, fmt.Errorf("%w: oversize: %d bytes exceeds the %d-byte limit", ErrUndecodable, len(data), maxBytes)
	}
	if !utf8.Valid(data) {
		return nil, Decoded{}, fmt.Errorf("%w: body is not valid UTF-8", ErrUndecodable)
	}
	d, err := checkEvent(subject, ev, false)
	return msg, d, err
}

// readsBack tells whether the event read from ev's binary-mode message
// is ev: a 1.0 context whose attributes are as the context's setters leave
// them (trimmed; nil, not empty), with no data schema, and only rein's
// own extensions, as strings. Anything else, EncodeChecked reads back.
func readsBack(ev *event.Event) bool {
	ec, ok := ev.Context.(*event.EventContextV1)
	if !ok || ec == nil || ev.FieldErrors != nil || ec.DataSchema != nil ||
		ec.ID == "" || strings.TrimSpace(ec.ID) != ec.ID || strings.TrimSpace(ec.Type) != ec.Type ||
		(ec.Time != nil && ec.Time.IsZero()) {
		return false
	}
	for _, p := range []*string{ec.DataContentType, ec.Subject} {
		if p != nil && (*p == "" || strings.TrimSpace(*p) != *p) {
			return false
		}
	}
	for name, v := range ec.Extensions {
		if _, own := extHeaders[name]; !own {
			return false
		}
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// validate1 is ev.Validate(), which allocates a map, a copy of the context
// and a parsed media type per call, answered without them for the plain
// 1.0 events rein writes; anything else goes to ev.Validate, which also
// says what is wrong.
func validate1(ev *event.Event) error {
	ec, ok := ev.Context.(*event.EventContextV1)
	if ok && ec != nil && ev.FieldErrors == nil &&
		strings.TrimSpace(ec.ID) != "" && strings.TrimSpace(ec.Type) != "" &&
		// A source whose string is not blank: a scheme, or a path from "/".
		(ec.Source.Scheme != "" || (ec.Source.Opaque == "" && strings.HasPrefix(ec.Source.Path, "/"))) &&
		(ec.DataContentType == nil || *ec.DataContentType == schemas.DataContentType) &&
		ec.DataSchema == nil &&
		(ec.Subject == nil || strings.TrimSpace(*ec.Subject) != "") {
		return nil
	}
	return ev.Validate()
}

// SubjectIDs extracts tenant and conversation from a per-conversation rein
// subject (rein.<kind>.<tenant>.<conv>[.<more>]).
// It returns substrings of subject: it runs on every delivery, so it must
// not allocate.
func SubjectIDs(subject string) (tenant, conv string, ok bool) {
	start, end, ok := subjectIDSpan(subject)
	if !ok {
		return "", "", false
	}
	key := subject[start:end]
	dot := strings.IndexByte(key, '.')
	return key[:dot], key[dot+1:], true
}

// ConversationKey is <tenant>.<conv> of a per-conversation rein subject,
// a substring of it, and ok=false when the subject names no conversation.
func ConversationKey(subject string) (key string, ok bool) {
	start, end, ok := subjectIDSpan(subject)
	if !ok {
		return "", false
	}
	return subject[start:end], true
}

// subjectIDSpan finds where <tenant>.<conv> lies in subject.
func subjectIDSpan(subject string) (start, end int, ok bool) {
	rest, found := strings.CutPrefix(subject, "rein.")
	if !found {
		return 0, 0, false
	}
	kind, rest, found := strings.Cut(rest, ".")
	if !found {
		return 0, 0, false
	}
	switch kind {
	case "turns", "ingest", "detections", "tasks", "steps", "escalations", "reports", "feedback":
	default:
		return 0, 0, false
	}
	start = len(subject) - len(rest)
	dot := strings.IndexByte(rest, '.')
	if dot < 0 {
		return 0, 0, false
	}
	end = start + dot + 1
	if next := strings.IndexByte(rest[dot+1:], '.'); next >= 0 {
		end += next
	} else {
		end = len(subject)
	}
	return start, end, true
}
