package audit

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Record is one stored message as read back, undecoded: replay writes it
// without paying for a CloudEvents decode and schema validation per event.
type Record struct {
	Stream   string
	Subject  string
	Sequence uint64
	Stored   time.Time // when the server stored it
	Header   nats.Header
	Data     []byte
}

// Attr returns the CloudEvents attribute or extension name from the
// binary-mode headers ("ce-<name>"; "content-type" or
// "ce-datacontenttype" for datacontenttype).
func (r *Record) Attr(name string) string {
	if name == "datacontenttype" {
		if v := r.header(bus.HeaderContentType); v != "" {
			return v
		}
	}
	return r.header(bus.HeaderCEPrefix + name)
}

func (r *Record) header(key string) string {
	if v, ok := r.Header[key]; ok && len(v) > 0 {
		return v[0]
	}
	for k, v := range r.Header { // headers written by other clients may differ in case
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Time is when the event happened: its ce-time, or when the server stored
// it for an event without one (streams.EventTime).
func (r *Record) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, r.Attr("time"))
	return streams.EventTime(t, r.Stored)
}

// Type is the CloudEvents type ("" when the message is not a binary-mode event).
func (r *Record) Type() string { return r.Attr("type") }

// readPull is how many messages the ordered consumer asks for at once.
const readPull = 1000

// Read calls fn for each message of the selection in stream order through
// an ordered consumer (no durable state is left on the server). start, if
// not nil, is told first how many messages the consumer holds pending (an
// upper bound when tenant or conversation filter by header). The *Record
// passed to fn is reused for the next message: copy what you keep. It stops at the
// end of the range, when fn returns an error or when ctx ends.
func Read(ctx context.Context, js jetstream.JetStream, sel Selection, start func(pending uint64), fn func(*Record) error) error {
	if err := sel.Validate(); err != nil {
		return err
	}
	filters := sel.filters()
	byHeader := len(sel.Filters) == 0 && filters == nil && (sel.Tenant != "" || sel.Conversation != "")
	rec := &Record{Stream: sel.Stream}
	r := streams.Range{Stream: sel.Stream, Filters: filters, FromSeq: sel.FromSeq, Since: sel.Since, ToSeq: sel.ToSeq, Until: sel.Until, Pull: readPull}
	return streams.ReadRange(ctx, js, r, start, func(msg jetstream.Msg, md *jetstream.MsgMetadata) error {
		rec.Subject, rec.Sequence, rec.Stored, rec.Header, rec.Data = msg.Subject(), md.Sequence.Stream, md.Timestamp, msg.Headers(), msg.Data()
		if !byHeader || (matchHeader(rec, schemas.ExtTenant, sel.Tenant) && matchHeader(rec, schemas.ExtConversation, sel.Conversation)) {
			return fn(rec)
		}
		return nil
	})
}

func matchHeader(r *Record, ext, want string) bool {
	return want == "" || r.Attr(ext) == want
}
