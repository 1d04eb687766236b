package schemas

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
)

// Source is the CloudEvents source attribute of events rein produces.
const Source = "/rein"

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
	if err := CheckIDs(m.Tenant, m.Conversation); err != nil {
		return cloudevents.Event{}, err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return cloudevents.Event{}, fmt.Errorf("marshal %s: %w", typ, err)
	}
	if validate {
		if err := Validate(typ, raw); err != nil {
			return cloudevents.Event{}, err
		}
	} else if !Known(typ) {
		return cloudevents.Event{}, fmt.Errorf("%w: %q", ErrUnknownType, typ)
	}
	e := cloudevents.NewEvent()
	e.SetID(id)
	e.SetType(typ)
	if source == "" {
		source = Source
	}
	e.SetSource(source)
	e.SetSubject(m.Conversation)
	e.SetTime(time.Now().UTC())
	e.SetExtension(ExtTenant, m.Tenant)
	e.SetExtension(ExtConversation, m.Conversation)
	e.SetExtension(ExtTurn, int32(m.Turn))
	e.SetExtension(ExtPartitionKey, m.Conversation)
	if m.Traceparent != "" {
		e.SetExtension(ExtTraceparent, m.Traceparent)
	}
	// The payload is JSON already: store it as is (SetData would marshal
	// it again, compacting a RawMessage byte by byte).
	e.SetDataContentType(DataContentType)
	e.DataEncoded = raw
	return e, nil
}

// MetaOf reads and checks rein's extensions from an event. The turn
// extension is optional (0 when absent).
func MetaOf(e *cloudevents.Event) (Meta, error) {
	ext := e.Extensions()
	m := Meta{
		Tenant:       extString(ext[ExtTenant]),
		Conversation: extString(ext[ExtConversation]),
		Traceparent:  extString(ext[ExtTraceparent]),
	}
	if m.Tenant == "" {
		return m, fmt.Errorf("%w: extension %q", ErrMissingAttr, ExtTenant)
	}
	if m.Conversation == "" {
		m.Conversation = e.Subject()
	}
	if m.Conversation == "" {
		return m, fmt.Errorf("%w: extension %q", ErrMissingAttr, ExtConversation)
	}
	if err := CheckIDs(m.Tenant, m.Conversation); err != nil {
		return m, err
	}
	if v, ok := ext[ExtTurn]; ok {
		n, err := strconv.Atoi(extString(v))
		if err != nil || n < 0 {
			return m, fmt.Errorf("%w: extension turn %q is not a non-negative integer", ErrBadID, extString(v))
		}
		m.Turn = n
	}
	return m, nil
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
