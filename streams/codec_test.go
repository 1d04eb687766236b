package streams_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	o := bustest.TurnEvent(t, "acme", "c-1", 3, "cancel that one")
	msg, err := streams.Encode(o.Subject, o.Event)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"ce-specversion", "ce-id", "ce-type", "ce-source", "ce-tenant", "ce-conversation", "ce-turn", "ce-datacontenttype", "Nats-Msg-Id"} {
		if msg.Header.Get(h) == "" {
			t.Errorf("header %s missing: %v", h, msg.Header)
		}
	}
	if got := msg.Header.Get("Nats-Msg-Id"); got != o.Event.ID() {
		t.Errorf("Nats-Msg-Id = %q, want the event id %q", got, o.Event.ID())
	}
	d, err := streams.Decode(msg.Subject, msg.Header, msg.Data, 0)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if d.Meta != (schemas.Meta{Tenant: "acme", Conversation: "c-1", Turn: 3}) {
		t.Errorf("meta = %+v", d.Meta)
	}
	var turn schemas.Turn
	if err := schemas.Decode(d.Event, &turn); err != nil || turn.Text != "cancel that one" {
		t.Errorf("payload = %+v, %v", turn, err)
	}
}

func TestDecodeStructuredMode(t *testing.T) {
	body := `{"specversion":"1.0","id":"x1","source":"/platform","type":"dev.rein.turn.v1","subject":"c9",
	  "tenant":"acme","conversation":"c9","turn":2,"datacontenttype":"application/json",
	  "data":{"role":"user","text":"hello","turn":2}}`
	d, err := streams.Decode("rein.turns.acme.c9.user", nil, []byte(body), 0)
	if err != nil {
		t.Fatalf("structured decode: %v", err)
	}
	if d.Meta.Turn != 2 || d.Event.ID() != "x1" {
		t.Errorf("got %+v id %s", d.Meta, d.Event.ID())
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	for name, m := range bustest.BadMessages(t) {
		t.Run(name, func(t *testing.T) {
			_, err := streams.Decode(m.Subject, m.Header, m.Data, 0)
			if !errors.Is(err, streams.ErrUndecodable) {
				t.Fatalf("err = %v, want ErrUndecodable", err)
			}
			if strings.TrimSpace(err.Error()) == streams.ErrUndecodable.Error() {
				t.Errorf("error gives no reason: %v", err)
			}
		})
	}
}

func TestSchemaErrorNamesField(t *testing.T) {
	_, err := streams.Decode("rein.turns.acme.c.user", nats.Header{
		"ce-specversion": {"1.0"}, "ce-id": {"1"}, "ce-source": {"/x"}, "ce-type": {schemas.TypeTurn},
		"ce-tenant": {"acme"}, "ce-conversation": {"c"}, "content-type": {"application/json"},
	}, []byte(`{"role":"robot","text":"x"}`), 0)
	if err == nil || !strings.Contains(err.Error(), "/role") {
		t.Fatalf("want an error naming /role, got %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	o := bustest.TurnEvent(f, "acme", "c-1", 1, "hello")
	msg, _ := streams.Encode(o.Subject, o.Event)
	f.Add(msg.Subject, msg.Header.Get("ce-type"), msg.Header.Get("ce-tenant"), msg.Data)
	f.Add("rein.turns.a.b.user", "", "", []byte(`{"specversion":"1.0"}`))
	f.Add("rein.turns.a.b.user", schemas.TypeTurn, "a", []byte("\xff"))
	f.Fuzz(func(t *testing.T, subject, typ, tenant string, data []byte) {
		h := nats.Header{}
		for k, v := range msg.Header {
			h[k] = append([]string(nil), v...)
		}
		h.Set("ce-type", typ)
		h.Set("ce-tenant", tenant)
		d, err := streams.Decode(subject, h, data, 0)
		if err == nil {
			// Anything accepted must be a valid, schema-checked rein event.
			if !schemas.ValidID(d.Meta.Tenant) || !schemas.ValidID(d.Meta.Conversation) {
				t.Fatalf("accepted bad ids: %+v", d.Meta)
			}
			if err := schemas.Validate(d.Event.Type(), d.Event.Data()); err != nil {
				t.Fatalf("accepted invalid payload: %v", err)
			}
		} else if !errors.Is(err, streams.ErrUndecodable) {
			t.Fatalf("error does not wrap ErrUndecodable: %v", err)
		}
	})
}
