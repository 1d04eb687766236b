package bench

import (
	"bytes"
	"compress/gzip"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// synthProfile encodes a CPU profile as runtime/pprof does (gzipped
// profile.proto, sample types samples/count and cpu/nanoseconds): one
// sample per stack (leaf first, each frame a location of its own unless
// a frame holds several names, an inlined call) with the given CPU ns.
func synthProfile(t *testing.T, stacks [][][]string, cpu []int64, packed bool) []byte {
	t.Helper()
	strs := []string{""}
	str := func(s string) uint64 {
		if i := slices.Index(strs, s); i >= 0 {
			return uint64(i)
		}
		strs = append(strs, s)
		return uint64(len(strs) - 1)
	}
	msg := func(build func(b []byte) []byte) []byte { return build(nil) }
	var out []byte
	for _, st := range [][2]string{{"samples", "count"}, {"cpu", "nanoseconds"}} {
		vt := msg(func(b []byte) []byte {
			b = protowire.AppendTag(b, fValueTypeType, protowire.VarintType)
			b = protowire.AppendVarint(b, str(st[0]))
			b = protowire.AppendTag(b, 2, protowire.VarintType)
			return protowire.AppendVarint(b, str(st[1]))
		})
		out = protowire.AppendTag(out, fProfileSampleType, protowire.BytesType)
		out = protowire.AppendBytes(out, vt)
	}
	funcs := map[string]uint64{}
	var locID uint64
	for i, stack := range stacks {
		var locs []uint64
		for _, frame := range stack {
			locID++
			loc := msg(func(b []byte) []byte {
				b = protowire.AppendTag(b, fLocationID, protowire.VarintType)
				b = protowire.AppendVarint(b, locID)
				for _, name := range frame {
					id, ok := funcs[name]
					if !ok {
						id = uint64(len(funcs) + 1)
						funcs[name] = id
						fn := msg(func(b []byte) []byte {
							b = protowire.AppendTag(b, fFunctionID, protowire.VarintType)
							b = protowire.AppendVarint(b, id)
							b = protowire.AppendTag(b, fFunctionName, protowire.VarintType)
							return protowire.AppendVarint(b, str(name))
						})
						out = protowire.AppendTag(out, fProfileFunction, protowire.BytesType)
						out = protowire.AppendBytes(out, fn)
					}
					line := msg(func(b []byte) []byte {
						b = protowire.AppendTag(b, fLineFunction, protowire.VarintType)
						return protowire.AppendVarint(b, id)
					})
					b = protowire.AppendTag(b, fLocationLine, protowire.BytesType)
					b = protowire.AppendBytes(b, line)
				}
				return b
			})
			out = protowire.AppendTag(out, fProfileLocation, protowire.BytesType)
			out = protowire.AppendBytes(out, loc)
			locs = append(locs, locID)
		}
		s := msg(func(b []byte) []byte {
			if packed {
				var p []byte
				for _, l := range locs {
					p = protowire.AppendVarint(p, l)
				}
				b = protowire.AppendTag(b, fSampleLocation, protowire.BytesType)
				b = protowire.AppendBytes(b, p)
				var v []byte
				v = protowire.AppendVarint(v, 1)
				v = protowire.AppendVarint(v, uint64(cpu[i]))
				b = protowire.AppendTag(b, fSampleValue, protowire.BytesType)
				return protowire.AppendBytes(b, v)
			}
			for _, l := range locs {
				b = protowire.AppendTag(b, fSampleLocation, protowire.VarintType)
				b = protowire.AppendVarint(b, l)
			}
			for _, v := range []uint64{1, uint64(cpu[i])} {
				b = protowire.AppendTag(b, fSampleValue, protowire.VarintType)
				b = protowire.AppendVarint(b, v)
			}
			return b
		})
		out = protowire.AppendTag(out, fProfileSample, protowire.BytesType)
		out = protowire.AppendBytes(out, s)
	}
	for _, s := range strs {
		out = protowire.AppendTag(out, fProfileStrings, protowire.BytesType)
		out = protowire.AppendString(out, s)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(out); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

// TestAttributeCPUByStack: each sample goes to the first category, in
// matching order, with a frame anywhere in its stack, inlined frames
// included; the shares are of the cpu values, not of the sample count.
func TestAttributeCPUByStack(t *testing.T) {
	f := func(names ...string) []string { return names }
	stacks := [][][]string{
		// The server's own write syscall: the server, whatever the leaf.
		{f("syscall.Syscall"), f("github.com/nats-io/nats-server/v2/server.(*fileStore).writeMsgRecord"), f("runtime.goexit")},
		// The state's JSON and its publish count as KV state.
		{f("encoding/json.Marshal"), f("github.com/reinception/rein/agentworker.store.save"), f("github.com/reinception/rein/agentworker.(*Stage).handle")},
		{f("github.com/nats-io/nats%2ego.(*Conn).publish"), f("github.com/reinception/rein/agentworker.store.publish")},
		// Validation inside a decode is validation; the decode alone, encoding.
		{f("github.com/santhosh-tekuri/jsonschema/v6.(*Schema).validate"), f("github.com/reinception/rein/schemas.Validate"), f("github.com/reinception/rein/streams.Decode")},
		{f("encoding/json.(*decodeState).object"), f("github.com/reinception/rein/streams.Decode"), f("github.com/reinception/rein/streams.(*Consumer).runOne.func2")},
		// An inlined frame counts: sha256 inlined into the task key's mac.
		{f("crypto/sha256.block", "github.com/reinception/rein/schemas.(*TaskKey).mac"), f("github.com/reinception/rein/detector.(*Stage).handle")},
		// The collector and allocation, whoever allocates.
		{f("runtime.scanobject"), f("runtime.gcDrainN"), f("runtime.gcAssistAlloc"), f("runtime.mallocgc"), f("github.com/nats-io/nats%2ego.(*Conn).processMsg")},
		{f("runtime.scanobject"), f("runtime.gcDrain"), f("runtime.gcBgMarkWorker")},
		{f("runtime.nextFreeFast", "runtime.mallocgc"), f("encoding/json.Marshal"), f("github.com/reinception/rein/streams.(*Consumer).dispatch")},
		{f("github.com/reinception/rein/inception.(*Rules).Detect")},
		{f("runtime.futex"), f("runtime.findRunnable"), f("runtime.schedule")},
		// nats.go's escaped name is matched as the package is imported.
		{f("github.com/nats-io/nats%2ego/jetstream.(*pullConsumer).fetch"), f("github.com/reinception/rein/streams.(*Consumer).fetch")},
		{f("runtime.selectgo"), f("github.com/reinception/rein/streams.(*Publisher).publishMsgs")},
		{f("github.com/reinception/rein/streams.(*Publisher).PublishAll"), f("github.com/reinception/rein/internal/app/bench.driveBench")},
		{f("runtime.futex"), f("runtime.notesleep")},
	}
	cpu := []int64{40, 10, 10, 5, 5, 2, 3, 7, 6, 4, 3, 2, 1, 1, 1}
	want := map[string]float64{
		CatServer: 40, CatKV: 20, CatValidation: 5, CatEncoding: 5, CatSigning: 2, CatGCAlloc: 16,
		CatInception: 4, CatScheduler: 3, CatClient: 2, CatRein: 1, CatBench: 1, CatOther: 1,
	}
	for _, packed := range []bool{true, false} {
		shares, n, err := AttributeCPU(bytes.NewReader(synthProfile(t, stacks, cpu, packed)))
		if err != nil {
			t.Fatal(err)
		}
		if n != len(stacks) {
			t.Errorf("%d samples, want %d", n, len(stacks))
		}
		var names []string
		sum := 0.0
		for _, s := range shares {
			names = append(names, s.Category)
			sum += s.Share
			if w := want[s.Category] / 100; math.Abs(s.Share-w) > 1e-9 {
				t.Errorf("packed %v: %s share %.3f, want %.3f", packed, s.Category, s.Share, w)
			}
		}
		if !slices.Equal(names, CategoryNames()) {
			t.Errorf("categories %v, want every one in order %v", names, CategoryNames())
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("shares sum to %v", sum)
		}
	}
}

var heapSink [][]byte

// TestParseProfileReadsRuntimeProfiles: the reader understands what
// runtime/pprof writes (a heap profile has the same encoding as a CPU
// profile and needs no waiting for samples), and a profile without cpu
// values is refused rather than attributed.
func TestParseProfileReadsRuntimeProfiles(t *testing.T) {
	// Large allocations are sampled all but surely.
	for range 8 {
		heapSink = append(heapSink, make([]byte, 4<<20))
	}
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := parseProfile(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.sampleTypes, "inuse_space") || !slices.Contains(p.sampleTypes, "alloc_objects") {
		t.Errorf("sample types %v", p.sampleTypes)
	}
	named := 0
	for _, s := range p.samples {
		for _, l := range s.locations {
			if fns := p.locations[l]; len(fns) > 0 && fns[0] != "" {
				named++
			}
		}
	}
	if len(p.samples) == 0 || named == 0 {
		t.Errorf("%d samples, %d named frames", len(p.samples), named)
	}
	if _, _, err := AttributeCPU(bytes.NewReader(buf.Bytes())); err == nil {
		t.Error("a heap profile was attributed as CPU time")
	}
	if _, _, err := AttributeCPU(bytes.NewReader([]byte{0x0a, 0xff})); err == nil {
		t.Error("a truncated profile was read")
	}
}

// --trace writes the runtime's execution trace of the run's window, and
// stopping twice (the deferred stop after finish) is harmless.
func TestRunProfileWritesTheExecutionTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trace")
	var progress bytes.Buffer
	p, err := startProfile(Plan{Trace: path}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
	p.stop()
	p.stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) || progress.Len() != 0 {
		t.Errorf("trace file starts %q (%d bytes), progress %q; want a Go execution trace", b[:min(len(b), 16)], len(b), progress.String())
	}
	if _, err := startProfile(Plan{Trace: filepath.Join(t.TempDir(), "missing", "run.trace")}, &progress); err == nil {
		t.Error("a trace that cannot be created was not reported")
	}
}
