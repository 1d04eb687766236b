package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// replayBenchEvents is the size of BenchmarkReplay's recorded pipeline.
const replayBenchEvents = 200_000

// pipelineStreams are the streams BenchmarkReplay replays, one after the
// other, as an operator exporting a day would.
var pipelineStreams = []string{bus.StreamTurns, bus.StreamDetections, bus.StreamTasks, bus.StreamSteps}

// BenchmarkReplay measures `rein replay` over a recorded pipeline of
// 200,000 events (user and agent turns, detections, tasks and steps,
// encoded by streams.Encode as the stages encode them) on the embedded
// server with file storage, read over TCP as the command reads a running
// rein. Each iteration reads the four streams twice, in alternating order:
// once through a bare ordered consumer that only counts messages (the
// reference: what NATS costs) and once through Replay in the
// sub-benchmark's format (jsonl and text to a file, to republishing into
// REIN_REPLAY). It reports events/s of both and their ratio, which is what
// to quote on a shared machine, and the CPU of the whole process (client
// and server) per event of each.
//
//	go test ./internal/app/audit/ -run '^$' -bench BenchmarkReplay -benchtime 3x -count 3
func BenchmarkReplay(b *testing.B) {
	defer TuneGC()() // as rein replay runs
	h := testutil.StartJetStream(b, "")
	counts := storePipeline(b, h, replayBenchEvents)
	nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: h.URL(), NkeyFile: h.Keys.SeedFile(natsserver.IdentityAdmin), Name: "bench-replay"})
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "replay.out")
	for _, mode := range []string{FormatJSONL, FormatText, "to"} {
		b.Run(mode, func(b *testing.B) {
			var raw, rep phase
			i := 0
			for b.Loop() {
				runRaw := func() { raw.measure(func() { readBare(b, js, counts) }) }
				runRep := func() { rep.measure(func() { replayStreams(b, js, mode, out, counts) }) }
				if i%2 == 0 {
					runRaw()
					runRep()
				} else {
					runRep()
					runRaw()
				}
				i++
				if mode == "to" { // the next iteration republishes anew, not into the duplicate window
					if err := js.DeleteStream(context.Background(), DefaultReplayStream); err != nil {
						b.Fatal(err)
					}
				}
			}
			n := float64(replayBenchEvents * i)
			b.ReportMetric(n/rep.wall.Seconds(), "events/s")
			b.ReportMetric(n/raw.wall.Seconds(), "raw-events/s")
			b.ReportMetric(raw.wall.Seconds()/rep.wall.Seconds(), "ratio")
			b.ReportMetric(rep.cpu.Seconds()*1e6/n, "cpu-µs/event")
			b.ReportMetric(raw.cpu.Seconds()*1e6/n, "raw-cpu-µs/event")
			if st, err := os.Stat(out); err == nil && mode != "to" {
				b.ReportMetric(float64(st.Size())/1e6, "out-MB")
			}
		})
	}
}

// phase accumulates the wall-clock and process CPU time of one side.
type phase struct{ wall, cpu time.Duration }

func (p *phase) measure(fn func()) {
	c0, t0 := cpuTime(), time.Now()
	fn()
	p.wall += time.Since(t0)
	p.cpu += cpuTime() - c0
}

// readBare reads each stream through an ordered consumer that does
// nothing but count: the reference.
func readBare(b *testing.B, js jetstream.JetStream, counts map[string]int) {
	ctx := context.Background()
	for _, name := range pipelineStreams {
		cons, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{})
		if err != nil {
			b.Fatal(err)
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(readPull))
		if err != nil {
			b.Fatal(err)
		}
		for range counts[name] {
			if _, err := it.Next(); err != nil {
				b.Fatal(err)
			}
		}
		it.Stop()
		deleteOrdered(js, name, cons)
	}
}

func deleteOrdered(js jetstream.JetStream, stream string, cons jetstream.Consumer) {
	if ci := cons.CachedInfo(); ci != nil {
		_ = js.DeleteConsumer(context.Background(), stream, ci.Name)
	}
}

// replayStreams replays each stream with Replay as `rein replay` does.
func replayStreams(b *testing.B, js jetstream.JetStream, mode, out string, counts map[string]int) {
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	cfg := ReplayConfig{Format: mode, Out: f}
	if mode == "to" {
		cfg = ReplayConfig{To: "replay.bench"}
	}
	for _, name := range pipelineStreams {
		n, err := Replay(context.Background(), js, Selection{Stream: name}, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if n.Written != uint64(counts[name]) || n.Skipped != 0 {
			b.Fatalf("%s: replayed %+v, want %d", name, n, counts[name])
		}
	}
}

// storePipeline records n events as the pipeline stores them, over 2,000
// conversations of two tenants: per user turn the user turn, the
// detection (every fourth one plants a thought), the task, the agent's
// steps (the planted think, a tool call, its result, the reply) and the
// agent turn. It returns how many events each stream holds.
func storePipeline(b *testing.B, h *testutil.JS, n int) map[string]int {
	b.Helper()
	counts := map[string]int{}
	var futures []jetstream.PubAckFuture
	wait := func() { futures = awaitAcks(b, futures) }
	stored := 0
	add := func(stream, subject, typ, id string, m schemas.Meta, at time.Time, data any) {
		if stored == n {
			return
		}
		e, err := schemas.NewEvent(typ, id, "", m, data)
		if err != nil {
			b.Fatal(err)
		}
		e.SetTime(at)
		msg, err := streams.Encode(subject, &e)
		if err != nil {
			b.Fatal(err)
		}
		f, err := h.JS.PublishMsgAsync(msg, jetstream.WithExpectStream(stream))
		if err != nil {
			b.Fatal(err)
		}
		futures = append(futures, f)
		if len(futures) == 2000 {
			wait()
		}
		counts[stream]++
		stored++
	}
	const convs = 2000
	for i := 0; stored < n; i++ {
		c, turn := i%convs, i/convs+1
		t, conv := tenantOf(c), fmt.Sprintf("conv-%05d", c)
		m := schemas.Meta{Tenant: t, Conversation: conv, Turn: turn}
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		user := fmt.Sprintf("I booked reservation %06X last week and now I want to change that one to the later flight, turn %d", i, turn)
		add(bus.StreamTurns, bus.TurnSubject(t, conv, schemas.RoleUser), schemas.TypeTurn, schemas.TurnMsgID(t, conv, turn, schemas.RoleUser), m, at,
			schemas.Turn{Role: schemas.RoleUser, Text: user, Turn: turn})
		planted := i%4 == 0
		det := schemas.Detection{Turn: turn, UserText: user, Module: "rules", LatencyMS: 0.4, TaxonomyVersion: "v1"}
		var inc *schemas.Inception
		if planted {
			det.Rein, det.ErrorType, det.Category, det.RecoveryTool = true, "anaphora", "ambiguous", schemas.ToolAmbiguityReport
			det.Evidence, det.Reasoning = "that one", "The user says \"that one\" with two flights on the reservation; report the ambiguity, then ask which flight is meant."
			inc = &schemas.Inception{Thought: det.Reasoning, ErrorType: det.ErrorType, RecoveryTool: det.RecoveryTool}
		}
		detID := schemas.EventID("detector", t, conv, turn)
		add(bus.StreamDetections, bus.DetectionSubject(t, conv), schemas.TypeDetection, detID, m, at.Add(time.Millisecond), det)
		add(bus.StreamTasks, bus.TaskSubject(t, conv), schemas.TypeTask, schemas.EventID("injector", t, conv, turn), m, at.Add(time.Millisecond),
			schemas.Task{Turn: turn, UserText: user, DetectionID: detID, Inception: inc})
		steps := []schemas.Step{
			{Kind: schemas.StepToolCall, Name: "get_reservation_details", CallID: "call_1", Arguments: json.RawMessage(fmt.Sprintf(`{"reservation_id":"%06X"}`, i))},
			{Kind: schemas.StepToolResult, Name: "get_reservation_details", CallID: "call_1",
				Output: fmt.Sprintf(`{"reservation_id": "%06X", "user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA", "flight_type": "one_way", "cabin": "economy", "flights": [{"flight_number": "HAT136", "date": "2024-05-20", "price": 128}], "passengers": [{"first_name": "Mia", "last_name": "Li"}]}`, i)},
			{Kind: schemas.StepReply, Output: "Which of the two flights on this reservation would you like to change?"},
		}
		if planted {
			args, _ := json.Marshal(map[string]string{"thought": det.Reasoning})
			steps = append([]schemas.Step{{Kind: schemas.StepThink, Name: schemas.ToolThink, CallID: "think_1", Arguments: args, Injected: true}}, steps...)
		}
		for k, st := range steps {
			st.Turn, st.Step = turn, k+1
			add(bus.StreamSteps, bus.StepSubject(t, conv), schemas.TypeStep, schemas.StepEventID(t, conv, turn, k+1), m, at.Add(time.Duration(k+2)*time.Millisecond), st)
		}
		add(bus.StreamTurns, bus.TurnSubject(t, conv, schemas.RoleAgent), schemas.TypeTurn, schemas.TurnMsgID(t, conv, turn, schemas.RoleAgent), m, at.Add(8*time.Millisecond),
			schemas.Turn{Role: schemas.RoleAgent, Text: "Which of the two flights on this reservation would you like to change?", Turn: turn})
	}
	wait()
	for name, want := range counts {
		if got := h.StreamMsgs(b, name); got != uint64(want) {
			b.Fatalf("%s holds %d, want %d", name, got, want)
		}
	}
	return counts
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
	events := float64(benchEvents * b.N)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(events/(cpuTime()-cpu0).Seconds(), "events/cpu-s")
}

const benchEvents = 100_000

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTextHeap measures what the text format's grouping costs in
// memory: 1,000,000 recorded-pipeline events of 2,000 conversations
// (≈ 160 MB of transcript, so the 64 MiB grouping bound is reached and
// the groups are written out twice) rendered to io.Discard with the
// collector setting rein replay uses, the Go heap sampled every 1,000
// events. It reports the peak heap in MB.
//
//	go test ./internal/app/audit/ -run '^$' -bench BenchmarkTextHeap -benchtime 1x
func BenchmarkTextHeap(b *testing.B) {
	defer TuneGC()()
	recs := pipelineRecords(b, 2000)
	var peak uint64
	for b.Loop() {
		runtime.GC()
		w := NewTextWriter(io.Discard)
		var ms runtime.MemStats
		for i := range 1_000_000 {
			r := recs[i%len(recs)]
			r.Sequence = uint64(i + 1)
			if err := w.Write(&r); err != nil {
				b.Fatal(err)
			}
			if i%1000 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
}

// pipelineRecords stores a small recorded pipeline (storePipeline, convs
// conversations) and returns its records, headers and bodies copied.
func pipelineRecords(b *testing.B, convs int) []Record {
	h := testutil.StartJetStream(b, "")
	counts := storePipeline(b, h, convs*10)
	var out []Record
	for _, name := range pipelineStreams {
		err := Read(context.Background(), h.JS, Selection{Stream: name}, nil, func(r *Record) error {
			out = append(out, *r)
			return nil
		})
		if err != nil || counts[name] == 0 {
			b.Fatalf("%s: %v", name, err)
		}
	}
	return out
}
