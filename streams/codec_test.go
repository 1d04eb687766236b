package streams_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

func turnEvent(t testing.TB, tenant, conv string, turn int, text string) *streams.Out {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", tenant, conv, turn)+"-user", "/test",
		schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn},
		schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: turn})
	if err != nil {
		t.Fatalf("new event: %v", err)
	}
	return &streams.Out{Stream: streams.StreamTurns, Subject: streams.TurnSubject(tenant, conv, schemas.RoleUser), Event: &ev}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	o := turnEvent(t, "acme", "c-1", 3, "cancel that one")
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

// badMessages are the malformed inputs every consumer must dead-letter.
func badMessages(t testing.TB) map[string]*nats.Msg {
	t.Helper()
	good := turnEvent(t, "acme", "bad-1", 1, "hi")
	base, err := streams.Encode(good.Subject, good.Event)
	if err != nil {
		t.Fatal(err)
	}
	clone := func(mut func(m *nats.Msg)) *nats.Msg {
		h := nats.Header{}
		for k, v := range base.Header {
			h[k] = append([]string(nil), v...)
		}
		m := &nats.Msg{Subject: base.Subject, Header: h, Data: append([]byte(nil), base.Data...)}
		mut(m)
		return m
	}
	return map[string]*nats.Msg{
		"malformed JSON":  clone(func(m *nats.Msg) { m.Data = []byte(`{"role":"user",`) }),
		"missing ce-type": clone(func(m *nats.Msg) { m.Header.Del("ce-type") }),
		"unknown type":    clone(func(m *nats.Msg) { m.Header.Set("ce-type", "com.example.other") }),
		"bad tenant id":   clone(func(m *nats.Msg) { m.Header.Set("ce-tenant", "ac me!") }),
		"subject mismatch": clone(func(m *nats.Msg) {
			m.Subject = "rein.turns.other.bad-1.user"
		}),
		"oversize":      clone(func(m *nats.Msg) { m.Data = bytes.Repeat([]byte("a"), streams.DefaultMaxEventBytes+1) }),
		"invalid UTF-8": clone(func(m *nats.Msg) { m.Data = []byte("{\"role\":\"user\",\"text\":\"\xff\xfe\"}") }),
		"schema: bad role": clone(func(m *nats.Msg) {
			m.Data = []byte(`{"role":"robot","text":"x","turn":1}`)
		}),
		"no headers, not JSON": {Subject: base.Subject, Data: []byte("plain text")},
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	for name, m := range badMessages(t) {
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
	o := turnEvent(f, "acme", "c-1", 1, "hello")
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
