package audit

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

func TestTranscriptGolden(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	publish(t, js, demoConversation(t)...)
	for _, tc := range []struct {
		golden string
		sel    Selection
	}{
		{"transcript_demo1.golden", Selection{Stream: bus.StreamTurns, Tenant: "acme", Conversation: "demo1"}},
		{"transcript_tenant.golden", Selection{Stream: bus.StreamTurns, Tenant: "acme"}},
		{"transcript_steps_demo1.golden", Selection{Stream: bus.StreamSteps, Tenant: "acme", Conversation: "demo1"}},
		{"transcript_dlq_demo1.golden", Selection{Stream: bus.StreamDLQ, Tenant: "acme", Conversation: "demo1"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var buf bytes.Buffer
			w := NewTextWriter(&buf)
			if err := Read(context.Background(), js.JS, tc.sel, nil, w.Write); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, tc.golden, buf.Bytes())
		})
	}
}

func TestTimelineOrder(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	publish(t, js, demoConversation(t)...)
	es, err := Timeline(context.Background(), js.JS, "acme", "demo1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, e := range es {
		ids = append(ids, e.ID)
		if i > 0 && e.Time.Before(es[i-1].Time) {
			t.Fatalf("entry %d (%s) is earlier than entry %d", i, e.ID, i-1)
		}
		if e.Type == schemas.TypeReport || e.ID == "dlq-detector-REIN_TURNS-2" {
			t.Fatalf("entry %s of another conversation", e.ID)
		}
	}
	want := []string{
		"turn-user.acme.demo1.1", "detection.acme.demo1.1", "task.acme.demo1.1", "step.acme.demo1.1.0", "step.acme.demo1.1.1",
		"turn-agent.acme.demo1.1", "turn-user.acme.demo1.2", "detection.acme.demo1.2", "task.acme.demo1.2",
		"step.acme.demo1.2.0", "step.acme.demo1.2.1", "step.acme.demo1.2.2", "escalation.acme.demo1.2",
		"turn-agent.acme.demo1.2", "turn-user.acme.demo1.3", "detection.acme.demo1.3", "dlq-agentworker-REIN_TASKS-9",
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("timeline\n got %v\nwant %v", ids, want)
	}
	// Every agent action names the detection of its turn that preceded it.
	for _, e := range es {
		switch e.Type {
		case schemas.TypeTask, schemas.TypeStep, schemas.TypeEscalation:
			if want := schemas.EventID("detection", "acme", "demo1", e.Turn); e.After != want {
				t.Errorf("%s after %q, want %q", e.ID, e.After, want)
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, "acme", "demo1", es); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "timeline_demo1.golden", buf.Bytes())
}

// Interleaved conversations come out grouped, each under one header in
// the order they first appear; past MaxBuffered the groups so far are
// written out and grouping starts again.
func TestTranscriptGroupsConversations(t *testing.T) {
	rec := func(seq uint64, conv, text string) *Record {
		ev, err := schemas.NewEvent(schemas.TypeTurn, conv+"-"+text, "/t", schemas.Meta{Tenant: "acme", Conversation: conv, Turn: 1},
			schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: 1})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := streams.Encode(bus.TurnSubject("acme", conv, schemas.RoleUser), &ev)
		if err != nil {
			t.Fatal(err)
		}
		return &Record{Stream: bus.StreamTurns, Subject: msg.Subject, Sequence: seq, Header: msg.Header, Data: msg.Data}
	}
	feed := func(w *TextWriter) string {
		var buf bytes.Buffer
		w.w.Reset(&buf)
		for i, c := range []string{"a", "b", "a", "c", "b", "a"} {
			if err := w.Write(rec(uint64(i+1), c, "text"+c)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	out := feed(NewTextWriter(nil))
	headers := regexp.MustCompile(`(?m)^== tenant acme, conversation (\w+)$`).FindAllStringSubmatch(out, -1)
	var got []string
	for _, h := range headers {
		got = append(got, h[1])
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("headers %v, want a, b, c once each:\n%s", got, out)
	}
	if i, j := strings.Index(out, "#3 "), strings.Index(out, "#2 "); i > j {
		t.Errorf("a's second event after b's first:\n%s", out)
	}
	small := NewTextWriter(nil)
	small.MaxBuffered = 1
	if n := strings.Count(feed(small), "== tenant"); n != 6 {
		t.Errorf("with a 1-byte bound: %d headers, want one per event", n)
	}
}

// TestTextLinesMatchFmt pins the hand-built transcript prefix to the fmt
// verbs it replaces ("%s #%-6d turn %-3s %-11s "), on values the goldens
// do not reach: a long sequence, a turn header with multi-byte runes, a
// kind wider than its column and a multi-line text.
func TestTextLinesMatchFmt(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 123e6, time.UTC)
	for _, tc := range []struct {
		seq        uint64
		turn, typ  string
		data, kind string
		text       string
	}{
		{7, "3", schemas.TypeTurn, `{"role":"user","text":"one\ntwo\n\n","turn":3}`, KindUser, "one\ntwo"},
		{12345678, "ü1", "dev.example.other", `{"x":1}`, KindOther, `dev.example.other {"x":1}`},
		{1, "", schemas.TypeHandoffTimeout, `{"escalation_id":"e","deadline":"d"}`, KindTimeout, "escalation e unclaimed by d"},
	} {
		hdr := nats.Header{"Ce-Specversion": {"1.0"}, "Ce-Type": {tc.typ}, "Ce-Tenant": {"acme"}, "Ce-Conversation": {"c1"},
			"Ce-Time": {at.Format(time.RFC3339Nano)}}
		if tc.turn != "" {
			hdr.Set("Ce-Turn", tc.turn)
		}
		var buf bytes.Buffer
		w := NewTextWriter(&buf)
		if err := w.Write(&Record{Stream: "S", Sequence: tc.seq, Header: hdr, Data: []byte(tc.data)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		turn := cmp.Or(tc.turn, "-")
		prefix := fmt.Sprintf("%s #%-6d turn %-3s %-11s ", at.Format(timeLayout), tc.seq, turn, tc.kind)
		lines := strings.Split(tc.text, "\n")
		want := "== tenant acme, conversation c1\n" + prefix + lines[0] + "\n"
		for _, l := range lines[1:] {
			want += strings.Repeat(" ", len([]rune(prefix))) + l + "\n"
		}
		if buf.String() != want {
			t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
		}
	}
}
