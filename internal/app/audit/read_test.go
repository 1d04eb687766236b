package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

func TestReplay100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 events")
	}
	const n, convs = 100_000, 1000
	js := testutil.StartJetStream(t, "")
	bulkTurns(t, js, n, convs)
	if got := js.StreamMsgs(t, bus.StreamTurns); got != n {
		t.Fatalf("stream holds %d messages, want %d", got, n)
	}
	all := readAll(t, js, Selection{Stream: bus.StreamTurns})
	if len(all) != n {
		t.Fatalf("full read: %d records, want %d", len(all), n)
	}
	for i, r := range all {
		if r.Sequence != uint64(i+1) {
			t.Fatalf("record %d has sequence %d", i, r.Sequence)
		}
	}

	t.Run("by conversation", func(t *testing.T) {
		for _, c := range []int{0, 1, 537, 999} {
			conv := fmt.Sprintf("c%04d", c)
			got := readAll(t, js, Selection{Stream: bus.StreamTurns, Tenant: tenantOf(c), Conversation: conv})
			if len(got) != n/convs {
				t.Fatalf("%s: %d records, want %d", conv, len(got), n/convs)
			}
			for i, r := range got {
				if want := uint64(i*convs + c + 1); r.Sequence != want {
					t.Fatalf("%s record %d: seq %d, want %d", conv, i, r.Sequence, want)
				}
				if r.Attr(schemas.ExtConversation) != conv || r.Attr(schemas.ExtTurn) != fmt.Sprint(i+1) {
					t.Fatalf("%s record %d: conversation %q turn %q", conv, i, r.Attr(schemas.ExtConversation), r.Attr(schemas.ExtTurn))
				}
			}
		}
	})

	t.Run("by tenant", func(t *testing.T) {
		got := readAll(t, js, Selection{Stream: bus.StreamTurns, Tenant: "globex"})
		if len(got) != n/2 {
			t.Fatalf("%d records, want %d", len(got), n/2)
		}
	})

	t.Run("by time range", func(t *testing.T) {
		since, until := all[30_000].Stored, all[69_999].Stored
		var want []uint64
		for _, r := range all {
			if !r.Stored.Before(since) && !r.Stored.After(until) {
				want = append(want, r.Sequence)
			}
		}
		got := readAll(t, js, Selection{Stream: bus.StreamTurns, Since: since, Until: until})
		if len(got) != len(want) || len(got) < 40_000 || len(got) >= n {
			t.Fatalf("%d records, want %d (at least 40000, fewer than all)", len(got), len(want))
		}
		for i := range got {
			if got[i].Sequence != want[i] {
				t.Fatalf("record %d: seq %d, want %d", i, got[i].Sequence, want[i])
			}
		}
	})

	t.Run("by sequence", func(t *testing.T) {
		for _, tc := range []struct {
			from, to   uint64
			first, cnt uint64
		}{
			{1, 10, 1, 10},
			{50_001, 50_001, 50_001, 1},
			{99_990, 0, 99_990, 11},
			{0, 25_000, 1, 25_000},
			{99_999, 200_000, 99_999, 2},
		} {
			got := readAll(t, js, Selection{Stream: bus.StreamTurns, FromSeq: tc.from, ToSeq: tc.to})
			if uint64(len(got)) != tc.cnt || got[0].Sequence != tc.first || got[len(got)-1].Sequence != tc.first+tc.cnt-1 {
				t.Fatalf("%d..%d: %d records", tc.from, tc.to, len(got))
			}
		}
	})

	t.Run("sequence and conversation", func(t *testing.T) {
		got := readAll(t, js, Selection{Stream: bus.StreamTurns, Tenant: "acme", Conversation: "c0002", FromSeq: 10_000, ToSeq: 20_000})
		if len(got) != 10 || got[0].Sequence != 10_003 || got[9].Sequence != 19_003 {
			t.Fatalf("got %d records from %d", len(got), got[0].Sequence)
		}
	})

	t.Run("jsonl", func(t *testing.T) {
		var buf bytes.Buffer
		w := NewJSONLWriter(&buf)
		var pending uint64
		err := Read(context.Background(), js.JS, Selection{Stream: bus.StreamTurns, Tenant: "acme", Conversation: "c0010"},
			func(p uint64) { pending = p }, w.Write)
		if err != nil || w.Flush() != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 100 || pending != 100 || w.Written != 100 {
			t.Fatalf("%d lines, pending %d, written %d", len(lines), pending, w.Written)
		}
		var first map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
			t.Fatal(err)
		}
		if first["type"] != schemas.TypeTurn || first["conversation"] != "c0010" {
			t.Fatalf("first line %s", lines[0])
		}
	})
}

func TestReadEmptyAndMissing(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	if got := readAll(t, js, Selection{Stream: bus.StreamSteps}); len(got) != 0 {
		t.Fatalf("empty stream gave %d records", len(got))
	}
	err := Read(context.Background(), js.JS, Selection{Stream: "NOPE"}, nil, func(*Record) error { return nil })
	if !streams.IsNotFound(err) {
		t.Fatalf("missing stream: %v", err)
	}
	for _, sel := range []Selection{
		{},
		{Stream: bus.StreamTurns, Tenant: "a.b"},
		{Stream: bus.StreamTurns, FromSeq: 5, ToSeq: 4},
		{Stream: bus.StreamTurns, Since: t0, Until: t0.Add(-time.Second)},
	} {
		if err := Read(context.Background(), js.JS, sel, nil, nil); err == nil {
			t.Errorf("%+v: no error", sel)
		}
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"", time.Time{}, false},
		{"24h", now.Add(-24 * time.Hour), false},
		{"90m", now.Add(-90 * time.Minute), false},
		{"7d", now.Add(-7 * 24 * time.Hour), false},
		{"2026-03-01T09:00:00Z", t0, false},
		{"2026-03-01T10:00:00+01:00", t0, false},
		{"yesterday", time.Time{}, true},
		{"-5h", time.Time{}, true},
		{"1.5d", time.Time{}, true},
	} {
		got, err := ParseTime(tc.in, now)
		if (err != nil) != tc.bad || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v", tc.in, got, err)
		}
	}
}
