package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/bus"
)

// dump is every stored message of every rein stream: subject, sequence,
// headers and body, in order.
func dump(t *testing.T, js *testutil.JS) map[string][]Record {
	t.Helper()
	out := map[string][]Record{}
	for _, name := range TimelineStreams {
		out[name] = readAll(t, js, Selection{Stream: name})
	}
	return out
}

func sameRecords(t *testing.T, a, b map[string][]Record) {
	t.Helper()
	for name, ra := range a {
		rb := b[name]
		if len(ra) != len(rb) {
			t.Fatalf("%s: %d messages before, %d after", name, len(ra), len(rb))
		}
		for i := range ra {
			x, y := ra[i], rb[i]
			if x.Subject != y.Subject || x.Sequence != y.Sequence || !x.Stored.Equal(y.Stored) || !bytes.Equal(x.Data, y.Data) {
				t.Fatalf("%s #%d differs: %s/%d vs %s/%d", name, i, x.Subject, x.Sequence, y.Subject, y.Sequence)
			}
			if len(x.Header) != len(y.Header) {
				t.Fatalf("%s #%d headers differ: %v vs %v", name, i, x.Header, y.Header)
			}
			for k, v := range x.Header {
				if y.Header.Get(k) != v[0] {
					t.Fatalf("%s #%d header %s differs", name, i, k)
				}
			}
		}
	}
}

func TestBackupRestoreRoundTrip(t *testing.T) {
	src := testutil.StartJetStream(t, "")
	publish(t, src, demoConversation(t)...)
	bulkTurns(t, src, 3000, 30)
	before := dump(t, src)
	dir := filepath.Join(t.TempDir(), "backup")
	ctx := context.Background()

	metas, err := Backup(ctx, src.Conn, dir, append(BackupStreams(), "NO_SUCH_STREAM"))
	if err != nil {
		t.Fatal(err)
	}
	if len(metas) != len(BackupStreams()) {
		t.Fatalf("backed up %d streams, want %d", len(metas), len(BackupStreams()))
	}
	for _, m := range metas {
		if st, err := os.Stat(filepath.Join(dir, m.Stream+snapshotExt)); err != nil || st.Size() != m.Bytes || m.Bytes == 0 {
			t.Fatalf("%s: %v size vs %d", m.Stream, err, m.Bytes)
		} else if st.Mode().Perm() != 0o600 {
			t.Errorf("%s snapshot mode %v, want 0600: it holds customers' conversations", m.Stream, st.Mode().Perm())
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("backup dir mode %v (%v), want 0700", st.Mode().Perm(), err)
	}

	t.Run("restore into a fresh server", func(t *testing.T) {
		dst := testutil.StartJetStream(t, "") // provisioned: the streams exist, empty
		if _, err := Restore(ctx, dst.Conn, dst.JS, dir, nil, false); !errors.Is(err, ErrBackup) {
			t.Fatalf("restore over existing streams without replace: %v", err)
		}
		got, err := Restore(ctx, dst.Conn, dst.JS, dir, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(metas) {
			t.Fatalf("restored %d streams", len(got))
		}
		sameRecords(t, before, dump(t, dst))
		if dst.StreamMsgs(t, bus.StreamTurns) != src.StreamMsgs(t, bus.StreamTurns) {
			t.Fatal("message counts differ")
		}
	})

	t.Run("restore after loss on the same server", func(t *testing.T) {
		if err := src.JS.DeleteStream(ctx, bus.StreamSteps); err != nil {
			t.Fatal(err)
		}
		if _, err := Restore(ctx, src.Conn, src.JS, dir, []string{bus.StreamSteps}, false); err != nil {
			t.Fatal(err)
		}
		sameRecords(t, before, dump(t, src))
	})

	t.Run("bad directory", func(t *testing.T) {
		if _, err := Restore(ctx, src.Conn, src.JS, t.TempDir(), nil, true); !errors.Is(err, ErrBackup) {
			t.Fatalf("empty dir: %v", err)
		}
	})
}
