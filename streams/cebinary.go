package streams

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// The CloudEvents NATS binding in binary content mode, written out by hand
// for the one case rein produces: spec version 1.0. Every rule below copies
// a decision of sdk-go's nats_jetstream binding (v2.16), which stays the
// reference: codec_equiv_test.go checks the two against each other.

// Header names as sdk-go writes them: "ce-" + the attribute or extension
// name, lower case as given; nats.Header keys are case-sensitive.
const (
	cePrefix        = "ce-"
	hdrSpecVersion  = "ce-specversion"
	hdrContentType  = "content-type"
	ceSpecVersionV1 = event.CloudEventsVersionV1
)

// extHeaders avoids building the header name of rein's own extensions.
var extHeaders = map[string]string{
	"tenant":       "ce-tenant",
	"conversation": "ce-conversation",
	"turn":         "ce-turn",
	"partitionkey": "ce-partitionkey",
	"traceparent":  "ce-traceparent",
}

// binaryHeader writes the header of ev in binary content mode, as
// nats_jetstream.WriteMsg does (binaryHeaderInto), in a map of its own.
func binaryHeader(ev *event.Event, stream string) (nats.Header, bool) {
	var b msgBuf
	if !binaryHeaderInto(&b, ev, stream) {
		return nil, false
	}
	return b.msg.Header, true
}

// msgBuf is a message with what its header is made of: the map and one
// backing array for the values. The Publisher takes them from msgBufs and
// hands them back (release) once the message is acknowledged: per message,
// they were three of what a turn allocates.
type msgBuf struct {
	msg  nats.Msg
	vals []string
}

// binaryHeaderInto writes the header of ev into b.msg.Header in binary content
// mode, as nats_jetstream.WriteMsg does: each non-empty attribute in spec
// order (id, source, specversion, type, datacontenttype, dataschema,
// subject, time), time as RFC 3339 with nanoseconds in its own zone, then
// every extension formatted by fmt.Sprint, which may overwrite an
// attribute's header as it does in sdk-go. It adds Nats-Msg-Id = id, and
// Nats-Expected-Stream = stream unless stream is "". It is false, writing
// nothing, for anything but a 1.0 event context. (Its name keeps the
// binaryHeader prefix the bench's CPU categories count as encoding.)
func binaryHeaderInto(b *msgBuf, ev *event.Event, stream string) bool {
	ec, ok := ev.Context.(*event.EventContextV1)
	if !ok || ec == nil {
		return false
	}
	n := 3 + len(ec.Extensions) // source, specversion, Nats-Msg-Id
	for _, set := range []bool{ec.ID != "", ec.Type != "", ec.DataContentType != nil, ec.DataSchema != nil,
		ec.Subject != nil, ec.Time != nil, stream != ""} {
		if set {
			n++
		}
	}
	w := b.headers(n)
	if ec.ID != "" {
		w.set("ce-id", ec.ID)
	}
	if s := ec.Source.String(); s != "" {
		w.set("ce-source", s)
	}
	w.set(hdrSpecVersion, ceSpecVersionV1)
	if ec.Type != "" {
		w.set("ce-type", ec.Type)
	}
	if ec.DataContentType != nil && *ec.DataContentType != "" {
		w.set("ce-datacontenttype", *ec.DataContentType)
	}
	if ec.DataSchema != nil {
		if s := ec.DataSchema.String(); s != "" {
			w.set("ce-dataschema", s)
		}
	}
	if ec.Subject != nil && *ec.Subject != "" {
		w.set("ce-subject", *ec.Subject)
	}
	if ec.Time != nil && !ec.Time.IsZero() {
		w.set("ce-time", ec.Time.Format(time.RFC3339Nano))
	}
	for name, v := range ec.Extensions {
		k, known := extHeaders[name]
		if !known {
			k = cePrefix + name
		}
		w.set(k, formatExtension(v))
	}
	w.set(bus.HeaderMsgID, ec.ID)
	if stream != "" {
		w.set(jetstream.ExpectedStreamHeader, stream)
	}
	b.keep(w)
	return true
}

// builtHeaderInto writes into b.msg.Header what binaryHeaderInto writes for
// bt.Event() (with the traceparent tp, when not "", in place of bt's), from
// bt's fields: attributes and rein's extensions as BuildEvent sets them,
// src being bt's parsed source. Only for a plain bt (schemas.Built.Plain).
func builtHeaderInto(b *msgBuf, bt *schemas.Built, src types.URIRef, tp, stream string) {
	if tp == "" {
		tp = bt.Meta.Traceparent
	}
	source := src.String()
	// id, specversion, datacontenttype, subject, tenant, conversation,
	// turn, partitionkey, Nats-Msg-Id, and what may be absent.
	n := 9
	for _, set := range []bool{source != "", bt.Type != "", !bt.Time.IsZero(), tp != "", stream != ""} {
		if set {
			n++
		}
	}
	w := b.headers(n)
	w.set("ce-id", bt.ID)
	if source != "" {
		w.set("ce-source", source)
	}
	w.set(hdrSpecVersion, ceSpecVersionV1)
	if bt.Type != "" {
		w.set("ce-type", bt.Type)
	}
	w.set("ce-datacontenttype", schemas.DataContentType)
	// The conversation is a checked id: never empty.
	w.set("ce-subject", bt.Meta.Conversation)
	if !bt.Time.IsZero() {
		w.set("ce-time", bt.Time.Format(time.RFC3339Nano))
	}
	w.set("ce-tenant", bt.Meta.Tenant)
	w.set("ce-conversation", bt.Meta.Conversation)
	// The turn extension's value is an Integer or, past int32, its decimal
	// string: written, both are the decimal.
	w.set("ce-turn", strconv.Itoa(bt.Meta.Turn))
	w.set("ce-partitionkey", bt.Meta.Conversation)
	if tp != "" {
		w.set("ce-traceparent", tp)
	}
	w.set(bus.HeaderMsgID, bt.ID)
	if stream != "" {
		w.set(jetstream.ExpectedStreamHeader, stream)
	}
	b.keep(w)
}

// setSource is ec.SetSource(s) with the source parsed once
// (schemas.SourceRef).
func setSource(ec *event.EventContextV1, s string) error {
	u, err := schemas.SourceRef(s)
	if err != nil {
		return err
	}
	ec.Source = u
	return nil
}

// formatExtension is fmt.Sprint(v), the formatting sdk-go applies, without
// fmt for the types rein uses.
func formatExtension(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// attribute bits, to notice an attribute given twice.
const (
	attrID = 1 << iota
	attrSource
	attrSpecVersion
	attrType
	attrDataContentType
	attrDataSchema
	attrSubject
	attrTime
)

// binaryEvent builds the event of a binary-mode 1.0 message as
// binding.ToEvent(nats_jetstream.NewMessage(msg)) does, and reports ok =
// false, leaving the decision to sdk-go, whenever it would differ or not be
// certain:
//   - the exact ce-specversion header is missing or not "1.0";
//   - a header has no value (sdk-go indexes the first one unchecked);
//   - an attribute or extension arrives under two keys (case variants, or
//     content-type beside ce-datacontenttype): sdk-go's result then depends
//     on map order;
//   - any setter fails: sdk-go says why.
//
// The rules copied: only keys with the case-sensitive prefix "ce-" and the
// key "content-type" count; the first value of each key is used; a ce- key
// that lower-cases to a 1.0 attribute sets it, any other is an extension
// named by the rest of the key (lower-cased, checked, stored as a string);
// values go through the event context's own setters (trimmed, URLs
// parsed, time as RFC 3339); a non-empty body becomes the data, shared,
// not copied.
func binaryEvent(h nats.Header, data []byte) (*event.Event, bool) {
	if sv := h[hdrSpecVersion]; len(sv) == 0 || sv[0] != ceSpecVersionV1 {
		return nil, false
	}
	r := &readEvent{}
	ec := &r.ec
	var seen int
	for k, v := range h {
		if len(v) == 0 {
			return nil, false
		}
		val := v[0]
		var bit int
		var err error
		switch {
		case k == hdrContentType:
			bit = attrDataContentType
			ec.DataContentType = setIn(&r.ct, val)
		case strings.HasPrefix(k, cePrefix):
			switch strings.ToLower(k) {
			case "ce-id":
				bit, err = attrID, ec.SetID(val)
			case "ce-source":
				bit, err = attrSource, setSource(ec, val)
			case hdrSpecVersion:
				// Only the exact key can be here alone with "1.0"; a case
				// variant is a second key for the same attribute.
				bit = attrSpecVersion
			case "ce-type":
				bit, err = attrType, ec.SetType(val)
			case "ce-datacontenttype":
				bit = attrDataContentType
				ec.DataContentType = setIn(&r.ct, val)
			case "ce-dataschema":
				bit, err = attrDataSchema, ec.SetDataSchema(val)
			case "ce-subject":
				bit = attrSubject
				ec.Subject = setIn(&r.subject, val)
			case "ce-time":
				var t time.Time
				if t, err = time.Parse(time.RFC3339Nano, val); err == nil {
					// SetTime, into r.
					ec.Time = nil
					if !t.IsZero() {
						r.time = types.Timestamp{Time: t}
						ec.Time = &r.time
					}
				}
				bit = attrTime
			default:
				name := k[len(cePrefix):]
				if _, dup := ec.Extensions[strings.ToLower(name)]; dup {
					return nil, false
				}
				if extHeaders[name] != k {
					err = ec.SetExtension(name, val)
					break
				}
				// One of rein's own, under its exact header: what
				// SetExtension does for a lower-case name that is no
				// attribute and a string value, without its checks.
				if ec.Extensions == nil {
					ec.Extensions = make(map[string]any, len(extHeaders))
				}
				ec.Extensions[name] = val
			}
		default:
			continue
		}
		if err != nil || seen&bit != 0 {
			return nil, false
		}
		seen |= bit
	}
	ev := &r.ev
	ev.Context = ec
	if len(data) > 0 {
		ev.DataEncoded = data
	}
	return ev, true
}

// ReadBinary reads the CloudEvent of a binary-mode 1.0 message as sdk-go's
// NATS binding does, without its allocations, and is false, reading
// nothing, wherever it is not certain to agree (binaryEvent says where):
// the caller then asks sdk-go. The ingress reads HTTP requests with it.
func ReadBinary(h nats.Header, data []byte) (*event.Event, bool) { return binaryEvent(h, data) }

// readEvent is an event read by binaryEvent with its context and what the
// context points to, so that reading one is one allocation, not five.
type readEvent struct {
	ev          event.Event
	ec          event.EventContextV1
	ct, subject string
	time        types.Timestamp
}

// setIn is what SetDataContentType and SetSubject do, into field (a string
// of a readEvent): the value trimmed, and nil for an empty one.
func setIn(field *string, v string) *string {
	if v = strings.TrimSpace(v); v == "" {
		return nil
	}
	*field = v
	return field
}

// msgBufs holds the messages the Publisher has seen acknowledged (see
// release).
var msgBufs sync.Pool

// maxPooledHeader is the most entries a map may hold and still be kept: an
// event with unusually many extensions does not keep a large map alive.
const maxPooledHeader = 32

// pooledMsg is a message from msgBufs for the Publisher to fill.
func pooledMsg() *msgBuf {
	if b, _ := msgBufs.Get().(*msgBuf); b != nil {
		return b
	}
	return &msgBuf{}
}

// release hands b back for the next message. Only for a message no one
// reads again: nats.go re-reads a pending message when it resends it (on
// "no responders"), and forgets the message once it is acknowledged
// (rein's connection sets no ack callback, which would also see it).
func (b *msgBuf) release() {
	if b == nil || len(b.msg.Header) > maxPooledHeader {
		return
	}
	clear(b.msg.Header)
	clear(b.vals)
	b.msg = nats.Msg{Header: b.msg.Header}
	b.vals = b.vals[:0]
	msgBufs.Put(b)
}

// headerWriter fills a message's header with one backing array for every
// value slice; each slice is capped at one element so that an Add on the
// result cannot write into its neighbour.
type headerWriter struct {
	h    nats.Header
	vals []string
}

// headers readies b's header for n values. Sized to what is written: a map
// with room for a few more entries than it holds can take twice the memory.
func (b *msgBuf) headers(n int) headerWriter {
	if cap(b.vals) < n {
		b.vals = make([]string, 0, n)
	}
	h := b.msg.Header
	if h == nil {
		h = make(nats.Header, n)
	}
	return headerWriter{h: h, vals: b.vals[:0]}
}

func (w *headerWriter) set(k, v string) {
	w.vals = append(w.vals, v)
	n := len(w.vals)
	w.h[k] = w.vals[n-1 : n : n]
}

// keep stores what w wrote in b.
func (b *msgBuf) keep(w headerWriter) { b.msg.Header, b.vals = w.h, w.vals }
