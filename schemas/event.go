package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
)

// Source is the CloudEvents source attribute of events rein produces.
const Source = "/rein"

// MaxTurn is the largest turn number rein accepts: 2^53-1, the largest
// integer every JSON reader (JavaScript's included) holds exactly. Turn
// numbers are 64-bit end to end (the constant does not fit a 32-bit int,
// so rein does not build where int is 32 bits); a number past MaxTurn is
// refused with ErrBadID, never wrapped.
const MaxTurn = 1<<53 - 1

// MaxTextChars is the longest turn text rein accepts, in characters
// (Unicode code points, as JSON Schema's maxLength counts them): the
// maxLength of text in jsonschema/dev.rein.turn.v1.json. The whole event
// body is bounded separately (streams.DefaultMaxEventBytes, 256 KiB).
const MaxTextChars = 65536

// maxTurn makes the build fail where int cannot hold MaxTurn.
const maxTurn int = MaxTurn

// Meta is what every rein event says about where it belongs.
type Meta struct {
	Tenant       string
	Conversation string
	Turn         int
	Traceparent  string
}

// NewEvent builds a validated CloudEvent of type typ with the given id,
// rein's extensions from m, and data marshalled as JSON. Use it for data
// from outside (the publish command, tests, platforms' turns).
func NewEvent(typ, id, source string, m Meta, data any) (cloudevents.Event, error) {
	return newEvent(typ, id, source, m, data, true)
}

// BuildEvent is NewEvent without the schema check, for the stages' own
// outputs, built from rein's payload structs on the hot path. They are
// still checked: every consumer validates what it reads (a non-conforming
// event is dead-lettered with the field named), and each stage's tests
// decode, and so validate, every event it produces.
func BuildEvent(typ, id, source string, m Meta, data any) (cloudevents.Event, error) {
	return newEvent(typ, id, source, m, data, false)
}

func newEvent(typ, id, source string, m Meta, data any, validate bool) (cloudevents.Event, error) {
	b, err := build(typ, id, source, m, data, validate)
	if err != nil {
		return cloudevents.Event{}, err
	}
	return b.Event(), nil
}

// Built is a stage's output as BuildEvent would put it in a CloudEvent,
// before it is one: the Publisher writes its headers straight from these
// fields (streams.Out.Built), without the event context and extension map
// (one allocation each) that an event needs and that are dropped as soon
// as it is encoded. Event gives the CloudEvent for anything else.
type Built struct {
	Type, ID string
	// Source is the source attribute ("" in Build means Source).
	Source string
	Meta   Meta
	// Time is when it was built, in UTC.
	Time time.Time
	// Data is the JSON payload.
	Data []byte
}

// Build is BuildEvent without the event: the same checks, the same
// payload bytes and time.
func Build(typ, id, source string, m Meta, data any) (Built, error) {
	return build(typ, id, source, m, data, false)
}

func build(typ, id, source string, m Meta, data any, validate bool) (Built, error) {
	if err := CheckIDs(m.Tenant, m.Conversation); err != nil {
		return Built{}, err
	}
	if err := CheckTurn(m.Turn); err != nil {
		return Built{}, err
	}
	raw, ok := appendPayload(nil, data)
	if !ok {
		var err error
		if raw, err = json.Marshal(data); err != nil {
			return Built{}, fmt.Errorf("marshal %s: %w", typ, err)
		}
	}
	if validate {
		if err := Validate(typ, raw); err != nil {
			return Built{}, err
		}
	} else if !Known(typ) {
		return Built{}, fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	if source == "" {
		source = Source
	}
	return Built{Type: typ, ID: id, Source: source, Meta: m, Time: time.Now().UTC(), Data: raw}, nil
}

// Event is b as a CloudEvent: what BuildEvent returns for the same input.
func (b *Built) Event() cloudevents.Event {
	e, ok := directEvent(b.Type, b.ID, b.Source, b.Meta, b.Time)
	if !ok {
		e = sdkEvent(b.Type, b.ID, b.Source, b.Meta, b.Time)
	}
	// The payload is JSON already: store it as is (SetData would marshal
	// it again, compacting a RawMessage byte by byte).
	e.DataEncoded = b.Data
	return e
}

// Plain tells whether b's event would hold its attributes exactly as
// given (no setter would trim or refuse one), and gives its parsed
// source: then a writer may take them from b's fields as they are.
func (b *Built) Plain() (types.URIRef, bool) {
	return plainAttrs(b.Type, b.ID, b.Source, b.Meta)
}

func plainAttrs(typ, id, source string, m Meta) (types.URIRef, bool) {
	if id == "" || strings.TrimSpace(id) != id || strings.TrimSpace(typ) != typ || strings.TrimSpace(m.Conversation) != m.Conversation {
		return types.URIRef{}, false
	}
	src, err := SourceRef(source)
	if err != nil {
		return types.URIRef{}, false
	}
	return src, true
}

// sdkEvent sets an event's attributes through sdk-go's setters: the
// reference for directEvent, and the path for what it declines.
func sdkEvent(typ, id, source string, m Meta, now time.Time) cloudevents.Event {
	e := cloudevents.NewEvent()
	e.SetID(id)
	e.SetType(typ)
	e.SetSource(source)
	e.SetSubject(m.Conversation)
	e.SetTime(now)
	e.SetExtension(ExtTenant, m.Tenant)
	e.SetExtension(ExtConversation, m.Conversation)
	e.SetExtension(ExtTurn, turnValue(m.Turn))
	e.SetExtension(ExtPartitionKey, m.Conversation)
	if m.Traceparent != "" {
		e.SetExtension(ExtTraceparent, m.Traceparent)
	}
	e.SetDataContentType(DataContentType)
	return e
}

// directContext is an event context with what its pointers point to, so
// that the context of a stage's output is one allocation, not four.
type directContext struct {
	ec       event.EventContextV1
	ct, conv string
	time     types.Timestamp
}

// directEvent builds the event sdkEvent builds, in one allocation of the
// context (directContext) and one of its extensions, with the source parsed
// once (SourceRef). It declines (ok false) what a setter would change or
// refuse: an id, type or conversation with surrounding space, or a source
// that does not parse. Tenant and conversation are checked ids already.
func directEvent(typ, id, source string, m Meta, now time.Time) (cloudevents.Event, bool) {
	src, ok := plainAttrs(typ, id, source, m)
	if !ok {
		return cloudevents.Event{}, false
	}
	n := 4
	if m.Traceparent != "" {
		n++
	}
	ext := make(map[string]any, n)
	// A string put in an interface is an allocation: the conversation's is
	// shared by both extensions that carry it.
	conv := any(m.Conversation)
	ext[ExtTenant] = m.Tenant
	ext[ExtConversation] = conv
	ext[ExtTurn] = turnValue(m.Turn)
	ext[ExtPartitionKey] = conv
	if m.Traceparent != "" {
		ext[ExtTraceparent] = m.Traceparent
	}
	d := &directContext{ct: DataContentType, conv: m.Conversation, time: types.Timestamp{Time: now}}
	d.ec = event.EventContextV1{
		ID:              id,
		Source:          src,
		Type:            typ,
		DataContentType: &d.ct,
		Subject:         &d.conv,
		Time:            &d.time,
		Extensions:      ext,
	}
	return cloudevents.Event{Context: &d.ec}, true
}

// Parsed sources, so that building or reading an event does not parse the
// same URL again: a handful of distinct values (the stages' "/rein", the
// ingress's, a platform's), bounded so that varied sources from outside
// cannot grow it.
var (
	sources     sync.Map // string → types.URIRef
	sourcesHeld atomic.Int32
)

// MaxHeldSources bounds the parsed sources SourceRef keeps.
const MaxHeldSources = 256

// SourceRef is a source attribute parsed as sdk-go's SetSource parses it,
// from a bounded cache. The URL's parts are shared: never modify them.
func SourceRef(s string) (types.URIRef, error) {
	if u, ok := sources.Load(s); ok {
		return u.(types.URIRef), nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return types.URIRef{}, err
	}
	ref := types.URIRef{URL: *u}
	if sourcesHeld.Load() < MaxHeldSources && sourcesHeld.Add(1) <= MaxHeldSources {
		sources.Store(s, ref)
	}
	return ref, nil
}

// extensionsOf is e's extensions, read in place for a 1.0 event:
// Extensions() copies the map on every call. Never modify the result.
func extensionsOf(e *cloudevents.Event) map[string]any {
	if ec, ok := e.Context.(*event.EventContextV1); ok {
		return ec.Extensions
	}
	return e.Extensions()
}

// Extension is e.Extensions()[name] without the copy of the map.
func Extension(e *cloudevents.Event, name string) (any, bool) {
	v, ok := extensionsOf(e)[name]
	return v, ok
}

// MetaOf reads and checks rein's extensions from an event. The turn
// extension is optional (0 when absent).
func MetaOf(e *cloudevents.Event) (Meta, error) {
	ext := extensionsOf(e)
	m := Meta{
		Tenant:       extString(ext[ExtTenant]),
		Conversation: extString(ext[ExtConversation]),
		Traceparent:  extString(ext[ExtTraceparent]),
	}
	if m.Tenant == "" {
		return m, &AttrError{Attr: ExtTenant, Err: fmt.Errorf("%w: extension %q", ErrMissingAttr, ExtTenant)}
	}
	if m.Conversation == "" {
		m.Conversation = e.Subject()
	}
	if m.Conversation == "" {
		return m, &AttrError{Attr: ExtConversation, Err: fmt.Errorf("%w: extension %q", ErrMissingAttr, ExtConversation)}
	}
	if err := CheckIDs(m.Tenant, m.Conversation); err != nil {
		return m, err
	}
	if v, ok := ext[ExtTurn]; ok {
		n, err := ParseTurn(extString(v))
		if err != nil {
			return m, &AttrError{Attr: ExtTurn, Err: fmt.Errorf("extension turn: %w", err)}
		}
		m.Turn = n
	}
	return m, nil
}

// CheckTurn refuses a turn number outside 0..MaxTurn.
func CheckTurn(n int) error {
	if n < 0 || n > maxTurn {
		return &AttrError{Attr: ExtTurn, Err: fmt.Errorf("%w: turn %d is outside 0..%d", ErrBadID, n, MaxTurn)}
	}
	return nil
}

// ParseTurn reads a turn number written in decimal, 0..MaxTurn.
func ParseTurn(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > MaxTurn {
		return 0, &AttrError{Attr: ExtTurn, Err: fmt.Errorf("%w: turn %q is not an integer in 0..%d", ErrBadID, s, MaxTurn)}
	}
	return int(n), nil
}

// turnValue is the turn extension's value: a CloudEvents Integer (32-bit
// by the spec) when it fits, else the decimal String, as the spec's type
// system has no wider integer. Readers accept both.
func turnValue(n int) any {
	if n <= math.MaxInt32 {
		return int32(n)
	}
	return strconv.Itoa(n)
}

func extString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int32:
		return strconv.Itoa(int(x))
	case int:
		return strconv.Itoa(x)
	default:
		return fmt.Sprint(x)
	}
}

// Decode validates an event's data against its type's schema and unmarshals
// it into out.
func Decode(e *cloudevents.Event, out any) error {
	if err := Validate(e.Type(), e.Data()); err != nil {
		return err
	}
	if err := json.Unmarshal(e.Data(), out); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedJSON, err)
	}
	return nil
}
