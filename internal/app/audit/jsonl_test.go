package audit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// TestAppendStructuredMatchesSDK checks the raw path against sdk-go: the
// line AppendStructured writes from binary-mode headers must be the event
// sdk-go decodes from the same message, marshalled by sdk-go.
func TestAppendStructuredMatchesSDK(t *testing.T) {
	m := schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 3, Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	for _, tc := range []struct {
		name string
		typ  string
		data any
	}{
		{"turn", schemas.TypeTurn, schemas.Turn{Role: "user", Text: "Cancel \"that\" one\n\tplease ü \u2028 <b>", Turn: 3}},
		{"detection", schemas.TypeDetection, schemas.Detection{Turn: 3, UserText: "x", Rein: true, ErrorType: "anaphora",
			Category: "ambiguous", RecoveryTool: "ambiguity_report", Reasoning: "r", Module: "rules", TaxonomyVersion: "v1"}},
		{"step", schemas.TypeStep, schemas.Step{Turn: 3, Step: 1, Kind: "tool_call", Name: "get", Arguments: json.RawMessage(`{"a": [1, 2]}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := schemas.NewEvent(tc.typ, "id-"+tc.name, "", m, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			msg, err := streams.Encode("rein.x.acme.c1", &e)
			if err != nil {
				t.Fatal(err)
			}
			line, ok := AppendStructured(nil, &Record{Subject: msg.Subject, Header: msg.Header, Data: msg.Data})
			if !ok || strings.Contains(string(line), "\n") {
				t.Fatalf("ok=%v line %s", ok, line)
			}
			dec, err := streams.Decode("rein.x.acme.c1", msg.Header, msg.Data, 0)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(dec.Event)
			if err != nil {
				t.Fatal(err)
			}
			var got, exp map[string]any
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if err := json.Unmarshal(want, &exp); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, exp) {
				t.Fatalf("raw path\n%s\nsdk-go\n%s", line, want)
			}
			var back event.Event
			if err := json.Unmarshal(line, &back); err != nil || back.ID() != e.ID() || string(back.Data()) != string(e.Data()) {
				t.Fatalf("sdk-go cannot read the line back: %v", err)
			}
		})
	}
}

func TestAppendStructuredNonEvents(t *testing.T) {
	structured := `{"specversion":"1.0","id":"x","source":"/s","type":"t",
  "data":{"a":1}}`
	for _, tc := range []struct {
		name string
		hdr  nats.Header
		data string
		want string
		ok   bool
	}{
		{"plain bytes", nil, "hello", "", false},
		{"structured copied compact", nats.Header{"content-type": {"application/cloudevents+json"}}, structured,
			`{"specversion":"1.0","id":"x","source":"/s","type":"t","data":{"a":1}}`, true},
		{"binary non-json data", nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"1"}, "ce-source": {"/s"}, "ce-type": {"t"},
			"content-type": {"text/plain"}}, "hi\x00", `{"specversion":"1.0","id":"1","source":"/s","type":"t","datacontenttype":"text/plain","data_base64":"aGkA"}`, true},
		{"invalid utf8 attribute", nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"a\xffb"}, "ce-source": {"/s"}, "ce-type": {"t"}}, "",
			`{"specversion":"1.0","id":"a\ufffdb","source":"/s","type":"t"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AppendStructured(nil, &Record{Header: tc.hdr, Data: []byte(tc.data)})
			if ok != tc.ok || string(got) != tc.want {
				t.Fatalf("got %q %v, want %q %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// BenchmarkAppendStructured is the per-event cost of the raw JSONL path
// without NATS.
func BenchmarkAppendStructured(b *testing.B) {
	e, _ := schemas.NewEvent(schemas.TypeTurn, "turn-user-acme-c1-3", "", schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 3},
		schemas.Turn{Role: "user", Text: "I want to change the flight I booked yesterday to the later one", Turn: 3})
	msg, _ := streams.Encode("rein.turns.acme.c1.user", &e)
	r := &Record{Subject: msg.Subject, Header: msg.Header, Data: msg.Data}
	var buf []byte
	for b.Loop() {
		buf, _ = AppendStructured(buf[:0], r)
	}
}

// Issue 32, LOW: rein replay omitted the time of an event posted without
// one while rein audit showed the store time; both now use the store time
// (Record.Time, streams.EventTime), and an event's own time still wins.
func TestReplayGivesAnUntimedEventTheStoreTime(t *testing.T) {
	stored := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	hdr := nats.Header{"Ce-Specversion": {"1.0"}, "Ce-Id": {"x"}, "Ce-Source": {"s"}, "Ce-Type": {"t"}}
	line, ok := AppendStructured(nil, &Record{Header: hdr, Data: []byte(`{}`), Stored: stored})
	if !ok || !strings.Contains(string(line), `"time":"2026-03-04T05:06:07Z"`) {
		t.Fatalf("replayed %s, want the store time", line)
	}
	hdr.Set("Ce-Time", "2020-01-02T03:04:05Z")
	line, _ = AppendStructured(nil, &Record{Header: hdr, Data: []byte(`{}`), Stored: stored})
	if !strings.Contains(string(line), `"time":"2020-01-02T03:04:05Z"`) || strings.Contains(string(line), "2026") {
		t.Fatalf("replayed %s, want the event's own time", line)
	}
}
