package agentworker

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// recordLog plays a conversation's writes as save makes them, without a
// server: each record encoded as stored, at a sequence of its own (other
// keys' records in between).
type recordLog struct {
	raws []streams.Raw
	seq  uint64
	at   time.Time
	// stale: the records stored from now on lack Prev and Whole, as a
	// worker before them wrote.
	stale bool
}

func (l *recordLog) save(t *testing.T, s *State, snapshot bool) {
	t.Helper()
	rec := s.record(nil, nil, snapshot)
	if l.stale {
		rec.Prev, rec.Whole = 0, false
	}
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	l.seq += 3
	l.at = l.at.Add(time.Second)
	l.raws = append(l.raws, streams.Raw{Subject: "kv.c", Sequence: l.seq, Time: l.at, Data: data})
	s.stored(rec, l.seq, nil, l.at)
}

func (l *recordLog) purge() {
	l.seq += 3
	l.raws = append(l.raws, streams.Raw{Subject: "kv.c", Sequence: l.seq, Time: l.at, Header: map[string][]string{kvOperation: {"PURGE"}}})
}

// turn plays turn n: its user message, a tool call whose result is
// written (a record the turn's next one supersedes), then the reply,
// unless unfinished; snapAt > 0 makes that write (1 or 2) a snapshot.
func (l *recordLog) turn(t *testing.T, s *State, n int, unfinished bool, snapAt int) {
	t.Helper()
	if s.Turn != n {
		s.begin(n, schemas.Task{Turn: n, UserText: fmt.Sprintf("user %d", n)})
	}
	id := fmt.Sprintf("c%d", n)
	s.Messages = append(s.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "cancel_reservation", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "cancel_reservation", Content: fmt.Sprintf("result %d", n)})
	l.save(t, s, snapAt == 1)
	if unfinished {
		return
	}
	s.Messages = append(s.Messages, llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("reply %d", n)})
	s.TurnDone, s.Outcome, s.Reply = true, OutcomeReply, fmt.Sprintf("reply %d", n)
	s.remember(n)
	l.save(t, s, snapAt == 2)
}

// forward is the State every record read in order gives (allRecords), the
// reference a chain must agree with.
func forward(t *testing.T, raws []streams.Raw) *State {
	t.Helper()
	recs, err := allRecords(raws)
	if err != nil {
		t.Fatal(err)
	}
	s := &State{progress: progress{Status: StatusActive}}
	for _, m := range raws {
		s.seq = max(s.seq, m.Sequence)
	}
	if len(recs) > 0 {
		s.assemble(recs)
	}
	return s
}

// A cache miss decodes only the records the context is built from — the
// newest back along Prev to a snapshot or a first turn's record — and
// rebuilds the State every record read in order gives: the same context,
// progress and next write (records since the snapshot never fewer, the
// whole context never dated later: a snapshot may come sooner, never
// later). A
// State rebuilt mid-turn goes on writing records that chain. Records that
// cannot chain (an older writer's, a purge, a link no longer kept) are all
// read, as before.
func TestMissDecodesOnlyTheChain(t *testing.T) {
	cases := []struct {
		name    string
		play    func(t *testing.T, l *recordLog, s *State) *State
		decoded int // records the chain decodes; 0: it does not chain
	}{
		{"turns with superseded records", func(t *testing.T, l *recordLog, s *State) *State {
			for n := 1; n <= 5; n++ {
				l.turn(t, s, n, false, 0)
			}
			return s
		}, 5},
		{"first turn only", func(t *testing.T, l *recordLog, s *State) *State {
			l.turn(t, s, 1, false, 0)
			return s
		}, 1},
		{"a snapshot in the middle of a turn", func(t *testing.T, l *recordLog, s *State) *State {
			for n := 1; n <= 4; n++ {
				snap := 0
				if n == 3 {
					snap = 1
				}
				l.turn(t, s, n, false, snap)
			}
			return s
		}, 3}, // turn 3's snapshot, turn 3's last record, turn 4's
		{"a snapshot ending a turn", func(t *testing.T, l *recordLog, s *State) *State {
			for n := 1; n <= 4; n++ {
				snap := 0
				if n == 2 {
					snap = 2
				}
				l.turn(t, s, n, false, snap)
			}
			return s
		}, 3},
		{"an unfinished turn", func(t *testing.T, l *recordLog, s *State) *State {
			l.turn(t, s, 1, false, 0)
			l.turn(t, s, 2, true, 0)
			l.turn(t, s, 3, false, 0)
			return s
		}, 3},
		{"rebuilt mid-turn, then on", func(t *testing.T, l *recordLog, s *State) *State {
			l.turn(t, s, 1, false, 0)
			l.turn(t, s, 2, false, 0)
			l.turn(t, s, 3, true, 0)
			s, _, err := fromRecords(l.raws)
			if err != nil {
				t.Fatal(err)
			}
			l.turn(t, s, 3, false, 0) // resumed: more of turn 3
			l.turn(t, s, 4, false, 0)
			return s
		}, 4},
		{"rebuilt after a snapshot, then on", func(t *testing.T, l *recordLog, s *State) *State {
			l.turn(t, s, 1, false, 0)
			l.turn(t, s, 2, false, 1)
			s, _, err := fromRecords(l.raws)
			if err != nil {
				t.Fatal(err)
			}
			l.turn(t, s, 3, false, 0)
			return s
		}, 3},
		{"an older writer's records", func(t *testing.T, l *recordLog, s *State) *State {
			l.stale = true
			l.turn(t, s, 1, false, 0)
			l.turn(t, s, 2, false, 0)
			l.stale = false
			s, _, err := fromRecords(l.raws)
			if err != nil {
				t.Fatal(err)
			}
			l.turn(t, s, 3, false, 0)
			return s
		}, 0},
		{"purged, then a new conversation", func(t *testing.T, l *recordLog, s *State) *State {
			l.turn(t, s, 1, false, 0)
			l.purge()
			s, found, err := fromRecords(l.raws)
			if err != nil || found {
				t.Fatalf("after a purge: found %v, %v", found, err)
			}
			l.turn(t, s, 2, false, 0)
			return s
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &recordLog{at: time.Unix(1e9, 0)}
			live := tc.play(t, l, &State{progress: progress{Status: StatusActive}})
			got, found, err := fromRecords(l.raws)
			if err != nil || !found {
				t.Fatalf("fromRecords: found %v, %v", found, err)
			}
			want := forward(t, l.raws)
			if !reflect.DeepEqual(got.Messages, want.Messages) || !reflect.DeepEqual(got.progress, want.progress) ||
				got.TurnStart != want.TurnStart || got.seq != want.seq || got.base != want.base || got.wholeAt.After(want.wholeAt) {
				t.Fatalf("chain gave\n%+v\nall records give\n%+v", got, want)
			}
			if got.records < want.records {
				t.Errorf("%d records since the snapshot, all records count %d", got.records, want.records)
			}
			if !reflect.DeepEqual(got.Messages, live.Messages) || got.Turn != live.Turn || got.records != live.records || got.base != live.base {
				t.Errorf("rebuilt %d messages (turn %d, %d records, base %d), the writer holds %d (turn %d, %d, base %d)",
					len(got.Messages), got.Turn, got.records, got.base, len(live.Messages), live.Turn, live.records, live.base)
			}
			recs, _, ok, err := chain(l.raws)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.decoded == 0 && ok:
				t.Errorf("chained %d records that cannot chain", len(recs))
			case tc.decoded > 0 && (!ok || len(recs) != tc.decoded):
				t.Errorf("chain decoded %d of %d records (ok %v), want %d", len(recs), len(l.raws), ok, tc.decoded)
			}
		})
	}
}

// A link to a record the bucket no longer keeps does not chain: every
// record kept is read instead.
func TestChainMissingLinkReadsAll(t *testing.T) {
	l := &recordLog{at: time.Unix(1e9, 0)}
	s := &State{progress: progress{Status: StatusActive}}
	for n := 1; n <= 3; n++ {
		l.turn(t, s, n, false, 0)
	}
	kept := l.raws[4:] // turn 2's records expired
	if _, _, ok, err := chain(kept); ok || err != nil {
		t.Fatalf("chain over a lost link: ok %v, %v", ok, err)
	}
}

// BenchmarkMissRebuild: a cache miss of a ten-turn conversation whose
// turns wrote two records each, rebuilt along the chain and from every
// record.
func BenchmarkMissRebuild(b *testing.B) {
	t := &testing.T{}
	l := &recordLog{at: time.Unix(1e9, 0)}
	s := &State{progress: progress{Status: StatusActive}}
	for n := 1; n <= 10; n++ {
		l.turn(t, s, n, false, 0)
	}
	b.Run("chain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := fromRecords(l.raws); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			recs, err := allRecords(l.raws)
			if err != nil {
				b.Fatal(err)
			}
			(&State{}).assemble(recs)
		}
	})
}
