package escalation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func openJSONL(t *testing.T, cfg JSONLConfig) *JSONL {
	t.Helper()
	s, err := NewJSONL(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ids(evs []cloudevents.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID()
	}
	return out
}

func TestJSONLAppendAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit", "rein.jsonl")
	m, _ := newTestMetrics(t)
	s, err := NewJSONL(JSONLConfig{Path: path, SyncInterval: time.Hour}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for turn := 1; turn <= 3; turn++ {
		ev := escalationEvent(t, "acme", "c1", turn)
		if err := s.Deliver(testCtx(t), ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev.ID())
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAuditFiles(path)
	if err != nil || fmt.Sprint(ids(got)) != fmt.Sprint(want) {
		t.Fatalf("after Flush: %v %v, want %v", ids(got), err, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Deliver(testCtx(t), reportEvent(t, "acme", "c1", 9)); !errors.Is(err, ErrClosed) {
		t.Fatalf("deliver after close: %v, want ErrClosed", err)
	}

	s2 := openJSONL(t, JSONLConfig{Path: path})
	ev := reportEvent(t, "acme", "c2", 1)
	if err := s2.Deliver(testCtx(t), ev); err != nil {
		t.Fatal(err)
	}
	want = append(want, ev.ID())
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	got, err = ReadAuditFiles(path)
	if err != nil || fmt.Sprint(ids(got)) != fmt.Sprint(want) {
		t.Fatalf("after reopen: %v %v, want %v", ids(got), err, want)
	}
	// Each line is a structured-mode CloudEvent with the data inline.
	raw, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first["specversion"] != "1.0" || first["tenant"] != "acme" || first["data"] == nil {
		t.Fatalf("line is not a structured CloudEvent: %s", lines[0])
	}
	if got := testutil.ToFloat64(m.SinkDeliveries.WithLabelValues(KindJSONL, KindJSONL, OutcomeDelivered)); got != 3 {
		t.Fatalf("delivered counter %v, want 3", got)
	}
}

// The periodic sync makes buffered lines durable without Flush or Close.
func TestJSONLPeriodicSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.jsonl")
	s := openJSONL(t, JSONLConfig{Path: path, SyncInterval: 10 * time.Millisecond})
	ev := escalationEvent(t, "acme", "c1", 1)
	if err := s.Deliver(testCtx(t), ev); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the periodic sync", func() bool {
		got, err := ReadAuditFiles(path)
		return err == nil && len(got) == 1 && got[0].ID() == ev.ID()
	})
}

func TestJSONLRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rein.jsonl")
	probe, _ := json.Marshal(escalationEvent(t, "acme", "c1", 10))
	lineLen := int64(len(probe) + 1)
	// Room for two lines per file (events differ only in digits of equal width).
	s := openJSONL(t, JSONLConfig{Path: path, MaxBytes: 2*lineLen + lineLen/2, SyncInterval: time.Hour})
	var want []string
	for turn := 10; turn < 17; turn++ {
		ev := escalationEvent(t, "acme", "c1", turn)
		if err := s.Deliver(testCtx(t), ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev.ID())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := AuditFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{path + ".1", path + ".2", path + ".3", path}
	if fmt.Sprint(files) != fmt.Sprint(wantFiles) {
		t.Fatalf("files %v, want %v", files, wantFiles)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 2*lineLen+lineLen/2 {
			t.Errorf("%s is %d bytes, over the limit", f, st.Size())
		}
	}
	got, err := ReadAuditFiles(path)
	if err != nil || fmt.Sprint(ids(got)) != fmt.Sprint(want) {
		t.Fatalf("records %v (%v), want %v", ids(got), err, want)
	}

	// Reopening continues numbering after the highest rotated file.
	s2 := openJSONL(t, JSONLConfig{Path: path, MaxBytes: 2*lineLen + lineLen/2})
	for turn := 17; turn < 19; turn++ {
		ev := escalationEvent(t, "acme", "c1", turn)
		if err := s2.Deliver(testCtx(t), ev); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev.ID())
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".4"); err != nil {
		t.Fatalf("want %s.4 after reopen: %v", path, err)
	}
	got, err = ReadAuditFiles(path)
	if err != nil || fmt.Sprint(ids(got)) != fmt.Sprint(want) {
		t.Fatalf("records %v (%v), want %v", ids(got), err, want)
	}
}

func TestJSONLCrashSafety(t *testing.T) {
	goodLine := func(turn int) []byte {
		b, err := json.Marshal(escalationEvent(t, "acme", "c1", turn))
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	two := append(goodLine(1), goodLine(2)...)
	tests := []struct {
		name     string
		content  []byte
		wantIDs  int
		wantTorn bool
		// newline-terminated garbage is only cut on open; a reader before
		// that reports it as corrupt rather than reading it as a record
		corruptBefore bool
	}{
		{"clean file", two, 2, false, false},
		{"empty file", nil, 0, false, false},
		{"torn line without newline", append(bytes.Clone(two), goodLine(3)[:40]...), 2, true, false},
		{"torn line that is only a prefix", append(bytes.Clone(two), '{'), 2, true, false},
		{"invalid json with newline", append(bytes.Clone(two), []byte("{\"id\":\"x\",\n")...), 2, true, true},
		{"zeroed block after crash", append(bytes.Clone(two), make([]byte, 512)...), 2, true, false},
		{"zeroed block ending in newline", append(append(bytes.Clone(two), make([]byte, 100)...), '\n'), 2, true, true},
		{"only a torn line", goodLine(3)[:20], 0, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rein.jsonl")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			// Readers never take the torn tail for a record, even before repair.
			before, err := ReadAuditFiles(path)
			if tc.corruptBefore != errors.Is(err, ErrCorruptAudit) || len(before) != tc.wantIDs {
				t.Fatalf("before repair: %d records (%v), want %d (corrupt %v)", len(before), err, tc.wantIDs, tc.corruptBefore)
			}
			s := openJSONL(t, JSONLConfig{Path: path})
			next := reportEvent(t, "acme", "c1", 7)
			if err := s.Deliver(testCtx(t), next); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := ReadAuditFiles(path)
			if err != nil {
				t.Fatalf("read after repair: %v", err)
			}
			if len(got) != tc.wantIDs+1 || got[len(got)-1].ID() != next.ID() {
				t.Fatalf("records %v, want %d old + %s", ids(got), tc.wantIDs, next.ID())
			}
			_, err = os.Stat(path + TornSuffix)
			if tc.wantTorn != (err == nil) {
				t.Fatalf("torn file exists = %v, want %v", err == nil, tc.wantTorn)
			}
			if tc.wantTorn {
				aside, _ := os.ReadFile(path + TornSuffix)
				cut := bytes.TrimPrefix(tc.content, two)
				if tc.name == "only a torn line" {
					cut = tc.content
				}
				if !bytes.HasPrefix(aside, cut) {
					t.Fatalf("moved aside %q, want the torn bytes %q", aside, cut)
				}
			}
		})
	}
}

func TestReadAuditRejectsCorruptMiddleLine(t *testing.T) {
	good, _ := json.Marshal(escalationEvent(t, "acme", "c1", 1))
	in := string(good) + "\nnot json\n" + string(good) + "\n"
	_, err := ReadAudit(strings.NewReader(in))
	if !errors.Is(err, ErrCorruptAudit) {
		t.Fatalf("err = %v, want ErrCorruptAudit", err)
	}
}

func TestJSONLConcurrentDeliver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rein.jsonl")
	probe, _ := json.Marshal(escalationEvent(t, "acme", "c1", 100))
	s := openJSONL(t, JSONLConfig{Path: path, MaxBytes: int64(len(probe)+1) * 10, SyncInterval: time.Millisecond})
	var wg sync.WaitGroup
	want := map[string]bool{}
	for w := range 8 {
		for i := range 25 {
			ev := escalationEvent(t, "acme", fmt.Sprintf("c%d", w), 100+i)
			want[ev.ID()] = true
			wg.Go(func() {
				if err := s.Deliver(testCtx(t), ev); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAuditFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for _, e := range got {
		if !want[e.ID()] {
			t.Fatalf("unexpected record %s", e.ID())
		}
		delete(want, e.ID())
	}
}
