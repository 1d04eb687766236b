package audit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/bus"
)

func TestCheckPrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"replay", true}, {"replay.run1", true}, {"audit-2026", true},
		{"", false}, {"rein", false}, {"rein.replay", false}, {"REIN.x", false}, {"replay.*", false},
		{"replay.>", false}, {"a..b", false}, {"$JS.API", false}, {"re play", false}, {".replay", false},
	} {
		err := CheckPrefix(tc.prefix)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrLivePrefix)) {
			t.Errorf("CheckPrefix(%q) = %v", tc.prefix, err)
		}
	}
}

func TestRepublish(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	publish(t, js, demoConversation(t)...)
	ctx := context.Background()
	turnsBefore := js.StreamMsgs(t, bus.StreamTurns)
	for run := range 2 { // a repeated replay is de-duplicated
		p, err := NewRepublisher(ctx, js.JS, "replay", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := Read(ctx, js.JS, Selection{Stream: bus.StreamTurns, Tenant: "acme", Conversation: "demo1"}, nil, p.Write); err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if p.Written != 5 {
			t.Fatalf("run %d wrote %d", run, p.Written)
		}
	}
	got := readAll(t, js, Selection{Stream: DefaultReplayStream})
	if len(got) != 5 {
		t.Fatalf("replay stream holds %d, want 5", len(got))
	}
	orig := readAll(t, js, Selection{Stream: bus.StreamTurns, Tenant: "acme", Conversation: "demo1"})
	for i, r := range got {
		if r.Subject != "replay."+orig[i].Subject || !strings.HasPrefix(r.Subject, "replay.rein.turns.acme.demo1.") ||
			string(r.Data) != string(orig[i].Data) || r.Attr("id") != orig[i].Attr("id") {
			t.Fatalf("record %d: %s", i, r.Subject)
		}
	}
	// Reading the replay stream by conversation uses the headers.
	if n := len(readAll(t, js, Selection{Stream: DefaultReplayStream, Tenant: "acme", Conversation: "demo1"})); n != 5 {
		t.Fatalf("header filter found %d", n)
	}
	if n := len(readAll(t, js, Selection{Stream: DefaultReplayStream, Tenant: "acme", Conversation: "nope"})); n != 0 {
		t.Fatalf("header filter found %d for another conversation", n)
	}
	if js.StreamMsgs(t, bus.StreamTurns) != turnsBefore {
		t.Fatal("live stream changed")
	}
	// A second prefix extends the replay stream's subjects.
	if _, err := NewRepublisher(ctx, js.JS, "replay2", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRepublisher(ctx, js.JS, "rein.replay", ""); !errors.Is(err, ErrLivePrefix) {
		t.Fatalf("live prefix: %v", err)
	}
}

// TestRepublishPastTheAckWindow republishes more events than the
// acknowledgements kept outstanding (republishBatch), so the window slides
// several times: every event is stored once, in order, and counted.
func TestRepublishPastTheAckWindow(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	const n = 2*republishBatch + 300
	bulkTurns(t, js, n, 50)
	ctx := context.Background()
	got, err := Replay(ctx, js.JS, Selection{Stream: bus.StreamTurns}, ReplayConfig{To: "replay.win"})
	if err != nil || got.Written != n {
		t.Fatalf("replayed %+v, %v; want %d", got, err, n)
	}
	if m := js.StreamMsgs(t, DefaultReplayStream); m != n {
		t.Fatalf("replay stream holds %d, want %d", m, n)
	}
	src := readAll(t, js, Selection{Stream: bus.StreamTurns})
	for i, r := range readAll(t, js, Selection{Stream: DefaultReplayStream}) {
		if r.Subject != "replay.win."+src[i].Subject || r.Attr("id") != src[i].Attr("id") ||
			r.Header.Get(bus.HeaderMsgID) != "replay.win:"+src[i].Header.Get(bus.HeaderMsgID) {
			t.Fatalf("record %d: %s %s, source %s %s", i, r.Subject, r.Attr("id"), src[i].Subject, src[i].Attr("id"))
		}
	}
}
