package streams

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	"github.com/nats-io/nats.go"
	"github.com/reinception/rein/schemas"
)

// The direct binary codec (cebinary.go) must be indistinguishable from
// sdk-go's nats_jetstream binding. These tests put both on the same inputs.

const equivSubject = "rein.turns.acme.c1.user"

// equivCorpus returns the events both encoders must agree on: every golden
// sample of schemas/testdata and events with unusual attributes and
// extensions.
func equivCorpus(t testing.TB) map[string]*event.Event {
	t.Helper()
	corpus := map[string]*event.Event{}
	files, err := filepath.Glob(filepath.Join("..", "schemas", "testdata", "*.json"))
	if err != nil || len(files) != len(schemas.AllTypes) {
		t.Fatalf("golden samples: %d files for %d types (%v)", len(files), len(schemas.AllTypes), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ev := event.New()
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		corpus["golden "+filepath.Base(f)] = &ev
	}

	turn := func(m schemas.Meta, mut func(e *event.Event)) *event.Event {
		ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", m.Tenant, m.Conversation, m.Turn), "/ingress", m,
			schemas.Turn{Role: schemas.RoleUser, Text: "cancel that one", Turn: m.Turn})
		if err != nil {
			t.Fatal(err)
		}
		ev.SetTime(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
		if mut != nil {
			mut(&ev)
		}
		return &ev
	}
	meta := schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 2}
	ext := func(name string, v any) func(e *event.Event) {
		return func(e *event.Event) {
			e.SetExtension(name, v)
			if err := e.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := func(tm time.Time) func(e *event.Event) { return func(e *event.Event) { e.SetTime(tm) } }
	mustURL := func(s string) url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return *u
	}
	for name, ev := range map[string]*event.Event{
		"turn":                  turn(meta, nil),
		"traceparent":           turn(schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 2, Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, nil),
		"largest turn":          turn(schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: math.MaxInt32}, nil),
		"turn 0":                turn(schemas.Meta{Tenant: "acme", Conversation: "c1"}, nil),
		"no subject":            turn(meta, func(e *event.Event) { e.SetSubject("") }),
		"dataschema":            turn(meta, func(e *event.Event) { e.SetDataSchema("https://rein.dev/schemas/turn.v1.json?x=1#f") }),
		"relative dataschema":   turn(meta, func(e *event.Event) { e.SetDataSchema("schemas/turn") }),
		"absolute source":       turn(meta, func(e *event.Event) { e.SetSource("https://example.com/a b/ü?q=1") }),
		"urn source":            turn(meta, func(e *event.Event) { e.SetSource("urn:rein:ingress") }),
		"no time":               turn(meta, func(e *event.Event) { e.SetTime(time.Time{}) }),
		"nanoseconds":           turn(meta, at(time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC))),
		"milliseconds":          turn(meta, at(time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC))),
		"east of UTC":           turn(meta, at(time.Date(2026, 6, 1, 23, 59, 59, 5000, time.FixedZone("IST", 5*3600+1800)))),
		"west of UTC":           turn(meta, at(time.Date(1999, 12, 31, 20, 0, 0, 0, time.FixedZone("", -8*3600)))),
		"local time":            turn(meta, at(time.Date(2026, 3, 29, 1, 30, 0, 0, time.Local))),
		"monotonic clock":       turn(meta, at(time.Now())),
		"year 0":                turn(meta, at(time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC))),
		"bool extension":        turn(meta, ext("flag", true)),
		"negative int32":        turn(meta, ext("delta", int32(math.MinInt32))),
		"int converted":         turn(meta, ext("count", 7)),
		"binary extension":      turn(meta, ext("blob", []byte{0, 1, 0xff})),
		"URI extension":         turn(meta, ext("link", types.URI{URL: mustURL("https://a.example/b?c=d")})),
		"URIRef extension":      turn(meta, ext("ref", types.URIRef{URL: mustURL("/x/y")})),
		"timestamp extension":   turn(meta, ext("at", types.Timestamp{Time: time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("", 3600))})),
		"time extension":        turn(meta, ext("seen", time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))),
		"padded extension":      turn(meta, ext("note", "  spaced out  ")),
		"unicode extension":     turn(meta, ext("note", "ünïcødé ✓")),
		"empty extension":       turn(meta, ext("empty", "")),
		"upper-case extension":  turn(meta, ext("MixedCase", "v")),
		"content-type params":   turn(meta, func(e *event.Event) { e.SetDataContentType("application/json; charset=utf-8") }),
		"no content type":       turn(meta, func(e *event.Event) { e.Context.(*event.EventContextV1).DataContentType = nil }),
		"extension shadows id":  turn(meta, func(e *event.Event) { e.Context.(*event.EventContextV1).Extensions["id"] = "shadow" }),
		"unvalidated extension": turn(meta, func(e *event.Event) { e.Context.(*event.EventContextV1).Extensions["raw"] = 3.5 }),
		"no data": func() *event.Event {
			e := event.New()
			e.SetID("bare")
			e.SetSource("/x")
			e.SetType(schemas.TypeTurn)
			return &e
		}(),
		"empty non-nil data": turn(meta, func(e *event.Event) { e.DataEncoded = []byte{} }),
		"text data":          turn(meta, func(e *event.Event) { _ = e.SetData("text/plain", "not json") }),
		"spec 0.3": func() *event.Event {
			e := event.New(event.CloudEventsVersionV03)
			e.SetID("old")
			e.SetSource("/x")
			e.SetType(schemas.TypeTurn)
			e.SetDataSchema("https://rein.dev/s")
			_ = e.SetData("application/json", json.RawMessage(`{"role":"user","text":"x"}`))
			return &e
		}(),
	} {
		corpus[name] = ev
	}
	return corpus
}

func TestEncodeMatchesSDK(t *testing.T) {
	for name, ev := range equivCorpus(t) {
		t.Run(name, func(t *testing.T) {
			want, err := sdkEncode(equivSubject, ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Encode(equivSubject, ev)
			if err != nil {
				t.Fatal(err)
			}
			if _, direct := binaryHeader(ev, ""); direct != (ev.SpecVersion() == event.CloudEventsVersionV1) {
				t.Errorf("direct path taken = %v for spec version %s", direct, ev.SpecVersion())
			}
			if !reflect.DeepEqual(got.Header, want.Header) {
				t.Errorf("header\n got %v\nwant %v", got.Header, want.Header)
			}
			if !reflect.DeepEqual(got.Data, want.Data) || got.Subject != want.Subject {
				t.Errorf("message %q %q, want %q %q", got.Subject, got.Data, want.Subject, want.Data)
			}
		})
	}
}

// headerVariants are malformed and unusual versions of a binary-mode
// header.
var headerVariants = []struct {
	name string
	mut  func(h nats.Header)
}{
	{"as encoded", func(nats.Header) {}},
	{"missing id", func(h nats.Header) { delete(h, "ce-id") }},
	{"missing source", func(h nats.Header) { delete(h, "ce-source") }},
	{"missing type", func(h nats.Header) { delete(h, "ce-type") }},
	{"missing specversion", func(h nats.Header) { delete(h, "ce-specversion") }},
	{"empty id", func(h nats.Header) { h["ce-id"] = []string{""} }},
	{"blank id", func(h nats.Header) { h["ce-id"] = []string{"  "} }},
	{"padded id and type", func(h nats.Header) { h["ce-id"] = []string{" x "}; h["ce-type"] = []string{"\tdev.rein.turn.v1 "} }},
	{"empty source", func(h nats.Header) { h["ce-source"] = []string{""} }},
	{"bad source URL", func(h nats.Header) { h["ce-source"] = []string{"%zz"} }},
	{"bad dataschema URL", func(h nats.Header) { h["ce-dataschema"] = []string{"http://[::1"} }},
	{"blank dataschema", func(h nats.Header) { h["ce-dataschema"] = []string{" "} }},
	{"bad time", func(h nats.Header) { h["ce-time"] = []string{"yesterday"} }},
	{"empty time", func(h nats.Header) { h["ce-time"] = []string{""} }},
	{"zero time", func(h nats.Header) { h["ce-time"] = []string{"0001-01-01T00:00:00Z"} }},
	{"time with offset", func(h nats.Header) { h["ce-time"] = []string{"2026-05-01T10:00:00.5+02:00"} }},
	{"time without seconds fraction", func(h nats.Header) { h["ce-time"] = []string{"2026-05-01T10:00:00Z"} }},
	{"time lower-case t", func(h nats.Header) { h["ce-time"] = []string{"2026-05-01t10:00:00z"} }},
	{"specversion 0.3", func(h nats.Header) { h["ce-specversion"] = []string{"0.3"} }},
	{"specversion 1.1", func(h nats.Header) { h["ce-specversion"] = []string{"1.1"} }},
	{"specversion padded", func(h nats.Header) { h["ce-specversion"] = []string{" 1.0"} }},
	{"specversion empty", func(h nats.Header) { h["ce-specversion"] = []string{""} }},
	{"unknown ce- header", func(h nats.Header) { h["ce-foo"] = []string{"bar"} }},
	{"v0.3 attribute name", func(h nats.Header) { h["ce-schemaurl"] = []string{"https://x"} }},
	{"data as extension", func(h nats.Header) { h["ce-data"] = []string{"{}"} }},
	{"upper-case extension key", func(h nats.Header) { h["ce-Foo"] = []string{"bar"} }},
	{"invalid extension name", func(h nats.Header) { h["ce-fo_o"] = []string{"bar"} }},
	{"empty extension name", func(h nats.Header) { h["ce-"] = []string{"bar"} }},
	{"non-ASCII extension name", func(h nats.Header) { h["ce-\u212aind"] = []string{"bar"} }},
	{"long extension name", func(h nats.Header) { h["ce-"+strings.Repeat("x", 40)] = []string{"v"} }},
	{"empty extension value", func(h nats.Header) { h["ce-tenant"] = []string{""} }},
	{"upper-case prefix ignored", func(h nats.Header) { h["CE-foo"] = []string{"bar"}; h["Ce-id"] = []string{"other"} }},
	{"key case variant alone", func(h nats.Header) { h["ce-ID"] = h["ce-id"]; delete(h, "ce-id") }},
	{"time key case variant", func(h nats.Header) { h["ce-Time"] = []string{"bad"}; delete(h, "ce-time") }},
	{"two values", func(h nats.Header) {
		h["ce-id"] = []string{"first", "second"}
		h["ce-tenant"] = []string{"acme", "other"}
	}},
	{"content-type instead", func(h nats.Header) {
		h["content-type"] = []string{"application/cloudevents+json"}
		delete(h, "ce-datacontenttype")
	}},
	{"Content-Type ignored", func(h nats.Header) { h["Content-Type"] = []string{"text/plain"} }},
	{"empty content type", func(h nats.Header) { h["ce-datacontenttype"] = []string{" "} }},
	{"empty subject", func(h nats.Header) { h["ce-subject"] = []string{""} }},
	{"other headers", func(h nats.Header) { h["Nats-Expected-Stream"] = []string{"X"}; h["traceparent"] = []string{"y"} }},
	{"id under two keys", func(h nats.Header) { h["ce-ID"] = []string{"other"} }},
	{"specversion under two keys", func(h nats.Header) { h["ce-SpecVersion"] = []string{"0.3"} }},
	{"content-type beside ce-datacontenttype", func(h nats.Header) { h["content-type"] = []string{"text/plain"} }},
	{"extension under two keys", func(h nats.Header) { h["ce-Tenant"] = []string{"other"} }},
}

func cloneHeader(h nats.Header) nats.Header {
	c := make(nats.Header, len(h))
	for k, v := range h {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// duplicated reports whether two keys of h set the same attribute or
// extension in sdk-go's binary reader.
func duplicated(h nats.Header) bool {
	seen := map[string]bool{}
	for k := range h {
		switch {
		case k == "content-type":
			k = "ce-datacontenttype"
		case strings.HasPrefix(k, "ce-"):
			k = strings.ToLower(k)
		default:
			continue
		}
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// checkDecodeEquivalence puts one message through both readers and through
// Decode with each; it returns whether the direct reader handled it.
func checkDecodeEquivalence(t *testing.T, subject string, h nats.Header, data []byte) bool {
	t.Helper()
	want, wantErr := sdkToEvent(subject, cloneHeader(h), data)
	got, ok := binaryEvent(h, data)
	// sdk-go's answer depends on map order when two keys set the same
	// field, and for 0.3 (its reader starts from a 1.0 context and converts
	// when it meets ce-specversion); the direct reader must leave those to
	// it. Everywhere else it must give sdk-go's answer.
	sv := h["ce-specversion"]
	v1 := len(sv) > 0 && sv[0] == event.CloudEventsVersionV1
	orderDependent := duplicated(h) || !v1
	switch {
	case ok && orderDependent:
		t.Fatalf("direct reader handled an order-dependent header: %v", h)
	case ok && wantErr != nil:
		t.Fatalf("direct reader accepted what sdk-go rejects (%v): %v", wantErr, h)
	case ok && !reflect.DeepEqual(got, want):
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("events differ for %v\n got %s\nwant %s\n got %#v\nwant %#v", h, g, w, got.Context, want.Context)
	case !ok && !orderDependent && wantErr == nil:
		t.Fatalf("direct reader declined a message sdk-go reads: %v", h)
	}
	if ok {
		checkEncodeChecked(t, subject, got)
	}
	if wantErr == nil && (validate1(want) == nil) != (want.Validate() == nil) {
		t.Fatalf("validate1 says %v, Validate %v, for %#v", validate1(want), want.Validate(), want.Context)
	}
	if orderDependent {
		return ok
	}
	d, err := Decode(subject, h, data, 0)
	dRef, errRef := decode(subject, cloneHeader(h), data, 0, sdkToEvent)
	if (err == nil) != (errRef == nil) {
		t.Fatalf("Decode error %v, sdk-go path %v", err, errRef)
	}
	// With equal events the reasons must match too; sdk-go's validation
	// error lists its lines in map order. (When the direct reader declines,
	// both ran sdk-go's reader, which reports whichever bad header it met
	// first.)
	if ok && err != nil && sortedLines(err.Error()) != sortedLines(errRef.Error()) {
		t.Fatalf("Decode error %q, sdk-go path %q", err, errRef)
	}
	if err == nil && !reflect.DeepEqual(d, dRef) {
		t.Fatalf("Decode = %+v, sdk-go path %+v", d, dRef)
	}
	return ok
}

// sortedLines puts the lines of an error in order, the first cut after the
// sentinel's text.
func sortedLines(s string) string {
	lines := strings.Split(strings.Replace(s, ": ", ":\n", 1), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestDecodeMatchesSDK(t *testing.T) {
	bodies := map[string][]byte{"": nil, "empty body": {}}
	for name, ev := range equivCorpus(t) {
		msg, err := sdkEncode(equivSubject, ev)
		if err != nil {
			t.Fatal(err)
		}
		bodies[""] = msg.Data
		for _, v := range headerVariants {
			for bname, body := range bodies {
				t.Run(name+"/"+v.name+"/"+bname, func(t *testing.T) {
					h := cloneHeader(msg.Header)
					v.mut(h)
					checkDecodeEquivalence(t, equivSubject, h, body)
				})
			}
		}
	}
}

// Decode's own answers are unchanged: the golden events still decode, the
// corpus turn is rejected for the reasons the sdk-go path gives.
func TestDecodeGoldenThroughDirectPath(t *testing.T) {
	for name, ev := range equivCorpus(t) {
		if !strings.HasPrefix(name, "golden ") {
			continue
		}
		msg, err := Encode(equivSubject, ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := binaryEvent(msg.Header, msg.Data); !ok {
			t.Errorf("%s: direct reader declined", name)
		}
		d, err := Decode(equivSubject, msg.Header, msg.Data, 0)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if d.Event.ID() != ev.ID() || d.Event.Type() != ev.Type() || !d.Event.Time().Equal(ev.Time()) || string(d.Event.Data()) != string(ev.Data()) {
			t.Errorf("%s: round trip changed the event: %v", name, d.Event)
		}
	}
}

// The fuzz input carries a header as lines "key:value"; a key repeated
// adds a value.
func encodeHeaderText(h nats.Header) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k + ":" + v + "\n")
		}
	}
	return b.String()
}

func parseHeaderText(s string) nats.Header {
	h := nats.Header{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			h[k] = append(h[k], v)
		}
	}
	return h
}

func FuzzDecodeEquivalence(f *testing.F) {
	for _, ev := range equivCorpus(f) {
		msg, err := sdkEncode(equivSubject, ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(equivSubject, encodeHeaderText(msg.Header), msg.Data)
		for _, v := range headerVariants {
			h := cloneHeader(msg.Header)
			v.mut(h)
			f.Add("rein.turns.acme.c2.user", encodeHeaderText(h), msg.Data)
		}
	}
	f.Fuzz(func(t *testing.T, subject, header string, data []byte) {
		checkDecodeEquivalence(t, subject, parseHeaderText(header), data)
	})
}

// checkEncodeChecked: EncodeChecked, which checks an event that reads back
// unchanged without reading it, answers what encoding it and decoding the
// message answers.
func checkEncodeChecked(t *testing.T, subject string, ev *event.Event) {
	t.Helper()
	msg, d, err := EncodeChecked(subject, ev, 0)
	ref, errEnc := Encode(subject, ev)
	if errEnc != nil {
		if err == nil {
			t.Fatalf("EncodeChecked took what Encode refuses (%v)", errEnc)
		}
		return
	}
	dRef, errRef := DecodeEnvelope(ref.Subject, ref.Header, ref.Data, 0)
	if (err == nil) != (errRef == nil) {
		t.Fatalf("EncodeChecked error %v, read back %v (reads back: %v) for %#v", err, errRef, readsBack(ev), ev.Context)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(msg.Header, ref.Header) || !bytes.Equal(msg.Data, ref.Data) || msg.Subject != ref.Subject {
		t.Fatalf("EncodeChecked message %v, Encode %v", msg.Header, ref.Header)
	}
	if d.Meta != dRef.Meta || d.Subject != dRef.Subject || d.Event.ID() != dRef.Event.ID() || d.Event.Type() != dRef.Event.Type() {
		t.Fatalf("EncodeChecked decoded %+v, read back %+v", d, dRef)
	}
}
