package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

const benchEvents = 100_000

// BenchmarkReplayJSONL measures rein replay's raw path: an ordered
// consumer over 100,000 turns written as CloudEvents JSONL to a file, with
// the GC setting `rein replay` uses.
func BenchmarkReplayJSONL(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	js := testutil.StartJetStream(b, "")
	bulkTurns(b, js, benchEvents, 1000)
	out := filepath.Join(b.TempDir(), "replay.jsonl")
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		w := NewJSONLWriter(f)
		if err := Read(context.Background(), js.JS, Selection{Stream: bus.StreamTurns}, nil, w.Write); err != nil {
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
	reportRates(b, cpu0)
}

// BenchmarkReplaySDK is the comparison: streams.ReadStream (sdk-go decode
// and schema validation per event) and sdk-go's JSON marshalling.
func BenchmarkReplaySDK(b *testing.B) {
	js := testutil.StartJetStream(b, "")
	bulkTurns(b, js, benchEvents, 1000)
	out := filepath.Join(b.TempDir(), "replay.jsonl")
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		n := 0
		err = streams.ReadStream(context.Background(), js.JS, bus.StreamTurns, streams.ReadOptions{}, func(r streams.Raw) error {
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
	reportRates(b, cpu0)
}

// reportRates reports events per wall-clock second and per CPU second of
// the whole process (client and the in-process server together): on a
// shared machine the second says what the code costs, the first what the
// machine gave it.
func reportRates(b *testing.B, cpu0 time.Duration) {
	events := float64(benchEvents * b.N)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(events/(cpuTime()-cpu0).Seconds(), "events/cpu-s")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
