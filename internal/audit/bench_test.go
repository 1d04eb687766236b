package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
)

const benchEvents = 100_000

// BenchmarkReplayJSONL measures rein replay's raw path: an ordered
// consumer over 100,000 turns written as CloudEvents JSONL to a file.
func BenchmarkReplayJSONL(b *testing.B) {
	js := testutil.StartJetStream(b, "")
	bulkTurns(b, js, benchEvents, 1000)
	out := filepath.Join(b.TempDir(), "replay.jsonl")
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		w := NewJSONLWriter(f)
		if err := Read(context.Background(), js.JS, Selection{Stream: streams.StreamTurns}, nil, w.Write); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if w.Written != benchEvents {
			b.Fatalf("wrote %d", w.Written)
		}
	}
	b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkReplaySDK is the comparison: streams.ReadStream (sdk-go decode
// and schema validation per event) and sdk-go's JSON marshalling.
func BenchmarkReplaySDK(b *testing.B) {
	js := testutil.StartJetStream(b, "")
	bulkTurns(b, js, benchEvents, 1000)
	out := filepath.Join(b.TempDir(), "replay.jsonl")
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		n := 0
		err = streams.ReadStream(context.Background(), js.JS, streams.StreamTurns, streams.ReadOptions{}, func(r streams.Raw) error {
			line, err := json.Marshal(r.Decoded.Event)
			if err != nil {
				return err
			}
			n++
			w.Write(line)
			return w.WriteByte('\n')
		})
		if err != nil {
			b.Fatal(err)
		}
		w.Flush()
		f.Close()
		if n != benchEvents {
			b.Fatalf("wrote %d", n)
		}
	}
	b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
}
