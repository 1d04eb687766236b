package bench

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Categories of CPU time, in the order a sample is matched against them:
// a sample counts for the first category with a frame anywhere in its
// stack. Allocation and the collector come first, whoever allocates (one
// lever: fewer allocations); the server is one component whatever else
// it calls; the rest are what is done for a purpose (the KV state's
// encoding and publishes count as KV state, not as JSON or client);
// CatRein is rein's own code otherwise (consume loops, publisher, agent
// loop, tools, scripted model), CatBench the driver offering the load.
const (
	CatGCAlloc    = "gc-alloc"
	CatScheduler  = "scheduler"
	CatServer     = "nats-server"
	CatBench      = "bench-driver"
	CatSigning    = "signing"
	CatValidation = "schema-validation"
	CatKV         = "kv-state"
	CatInception  = "rules-inception"
	CatEncoding   = "json-cloudevents"
	CatClient     = "jetstream-client"
	CatRein       = "rein-other"
	CatOther      = "other"
)

// categoryRules are the frame-name prefixes of each category, in matching
// order; CatOther takes the rest.
var categoryRules = []struct {
	name     string
	prefixes []string
}{
	{CatGCAlloc, []string{"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep", "runtime.bgscavenge", "runtime.GC", "runtime.gcStart",
		"runtime.mallocgc", "runtime.newobject", "runtime.growslice", "runtime.makeslice", "runtime.makemap", "runtime.wbBufFlush"}},
	{CatScheduler, []string{"runtime.schedule", "runtime.findRunnable", "runtime.park_m", "runtime.goexit0", "runtime.gosched_m",
		"runtime.sysmon", "runtime.ready", "runtime.wakep"}},
	{CatServer, []string{"github.com/nats-io/nats-server/"}},
	{CatBench, []string{"github.com/reinception/rein/internal/app/bench."}},
	{CatSigning, []string{"github.com/reinception/rein/schemas.(*TaskKey)."}},
	{CatValidation, []string{"github.com/santhosh-tekuri/jsonschema/", "github.com/reinception/rein/schemas.Validate"}},
	{CatKV, []string{"github.com/reinception/rein/agentworker.store.", "github.com/reinception/rein/agentworker.(*Stage).load",
		"github.com/reinception/rein/agentworker.(*Stage).save", "github.com/reinception/rein/agentworker.(*State).assemble",
		"github.com/nats-io/nats.go/jetstream.(*kv)."}},
	{CatInception, []string{"github.com/reinception/rein/inception.", "github.com/reinception/rein/inception/"}},
	{CatEncoding, []string{"encoding/json.", "github.com/cloudevents/sdk-go/", "github.com/reinception/rein/streams.Encode",
		"github.com/reinception/rein/streams.Decode", "github.com/reinception/rein/streams.decode", "github.com/reinception/rein/streams.Decoded.Payload",
		"github.com/reinception/rein/streams.binaryHeader", "github.com/reinception/rein/streams.binaryEvent",
		"github.com/reinception/rein/schemas.BuildEvent", "github.com/reinception/rein/schemas.NewEvent", "github.com/reinception/rein/schemas.newEvent",
		"github.com/reinception/rein/schemas.Decode"}},
	{CatClient, []string{"github.com/nats-io/nats.go"}},
	{CatRein, []string{"github.com/reinception/rein/"}},
}

// CategoryNames are every category, in matching order.
func CategoryNames() []string {
	names := make([]string, 0, len(categoryRules)+1)
	for _, r := range categoryRules {
		names = append(names, r.name)
	}
	return append(names, CatOther)
}

// Category returns the category of a stack (leaf first).
func Category(stack []string) string {
	for _, r := range categoryRules {
		for _, fn := range stack {
			for _, p := range r.prefixes {
				if strings.HasPrefix(fn, p) {
					return r.name
				}
			}
		}
	}
	return CatOther
}

// CPUShare is one category's part of a run's CPU time.
type CPUShare struct {
	Category      string  `json:"category"`
	Share         float64 `json:"share"`
	CPUSecPer1000 float64 `json:"cpu_s_per_1000_turns"`
}

// AttributeCPU reads a CPU profile (as runtime/pprof writes it) and
// returns each category's share of its CPU time, every category listed in
// matching order, and the profile's sample count.
func AttributeCPU(r io.Reader) ([]CPUShare, int, error) {
	p, err := parseProfile(r)
	if err != nil {
		return nil, 0, err
	}
	vi := -1
	for i, st := range p.sampleTypes {
		if st == "cpu" {
			vi = i
		}
	}
	if vi < 0 {
		return nil, 0, fmt.Errorf("bench: a profile without cpu samples (types %v)", p.sampleTypes)
	}
	by := map[string]int64{}
	var total int64
	var stack []string
	for _, s := range p.samples {
		if vi >= len(s.values) {
			continue
		}
		stack = stack[:0]
		for _, id := range s.locations {
			stack = append(stack, p.locations[id]...)
		}
		v := s.values[vi]
		by[Category(stack)] += v
		total += v
	}
	out := make([]CPUShare, 0, len(by))
	for _, name := range CategoryNames() {
		share := 0.0
		if total > 0 {
			share = float64(by[name]) / float64(total)
		}
		out = append(out, CPUShare{Category: name, Share: share})
	}
	return out, len(p.samples), nil
}

// profile is what attribution needs of a pprof profile: each location's
// function names (inlined first, as pprof lists them) and each sample's
// locations (leaf first) and values.
type profile struct {
	sampleTypes []string
	samples     []sample
	locations   map[uint64][]string
}

type sample struct {
	locations []uint64
	values    []int64
}

// Field numbers of profile.proto (github.com/google/pprof, proto/profile.proto).
const (
	fProfileSampleType = 1
	fProfileSample     = 2
	fProfileLocation   = 4
	fProfileFunction   = 5
	fProfileStrings    = 6
	fValueTypeType     = 1
	fSampleLocation    = 1
	fSampleValue       = 2
	fLocationID        = 1
	fLocationLine      = 4
	fLineFunction      = 1
	fFunctionID        = 1
	fFunctionName      = 2
)

var errProfile = errors.New("bench: malformed profile")

// parseProfile decodes a gzipped (or plain) profile.proto message. It
// reads only the fields attribution needs; unknown ones are skipped.
func parseProfile(r io.Reader) (*profile, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errProfile, err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%w: %w", errProfile, err)
		}
	}
	var (
		strs      []string
		typeIdx   []int64
		locLines  = map[uint64][]uint64{} // location → function ids
		funcNames = map[uint64]int64{}    // function → string index
		p         = &profile{locations: map[uint64][]string{}}
	)
	err = fields(raw, func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
		switch num {
		case fProfileStrings:
			strs = append(strs, string(b))
		case fProfileSampleType:
			return fields(b, func(n protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
				if n == fValueTypeType {
					typeIdx = append(typeIdx, int64(v))
				}
				return nil
			})
		case fProfileSample:
			var s sample
			err := fields(b, func(n protowire.Number, t protowire.Type, v uint64, b []byte) error {
				switch n {
				case fSampleLocation:
					return varints(t, v, b, func(x uint64) { s.locations = append(s.locations, x) })
				case fSampleValue:
					return varints(t, v, b, func(x uint64) { s.values = append(s.values, int64(x)) })
				}
				return nil
			})
			p.samples = append(p.samples, s)
			return err
		case fProfileLocation:
			var id uint64
			var fns []uint64
			err := fields(b, func(n protowire.Number, _ protowire.Type, v uint64, b []byte) error {
				switch n {
				case fLocationID:
					id = v
				case fLocationLine:
					return fields(b, func(n protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
						if n == fLineFunction {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			locLines[id] = fns
			return err
		case fProfileFunction:
			var id uint64
			var name int64
			err := fields(b, func(n protowire.Number, _ protowire.Type, v uint64, _ []byte) error {
				switch n {
				case fFunctionID:
					id = v
				case fFunctionName:
					name = int64(v)
				}
				return nil
			})
			funcNames[id] = name
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	str := func(i int64) string {
		if i >= 0 && int(i) < len(strs) {
			return strs[i]
		}
		return ""
	}
	for _, i := range typeIdx {
		p.sampleTypes = append(p.sampleTypes, str(i))
	}
	for id, fns := range locLines {
		names := make([]string, 0, len(fns))
		for _, f := range fns {
			// The symbol table escapes a dot in a path's last element
			// (nats%2ego); the rules spell packages as imported.
			names = append(names, strings.ReplaceAll(str(funcNames[f]), "%2e", "."))
		}
		p.locations[id] = names
	}
	return p, nil
}

// fields calls fn for each field of a message: v holds a varint's value,
// b a length-delimited field's bytes.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errProfile
		}
		b = b[n:]
		var v uint64
		var sub []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			sub, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errProfile
		}
		b = b[n:]
		if err := fn(num, typ, v, sub); err != nil {
			return err
		}
	}
	return nil
}

// varints reads a repeated integer field, packed or not.
func varints(typ protowire.Type, v uint64, b []byte, add func(uint64)) error {
	if typ == protowire.VarintType {
		add(v)
		return nil
	}
	for len(b) > 0 {
		x, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return errProfile
		}
		add(x)
		b = b[n:]
	}
	return nil
}

// runProfile is the CPU profile of a pipeline run, in memory until the
// run ends.
type runProfile struct {
	buf       bytes.Buffer
	on        bool // profiling now
	taken     bool // a profile was started: buf holds it once stopped
	path      string
	breakdown bool
	progress  io.Writer
	trace     *os.File // the execution trace being written (--trace)
}

// startProfile starts the CPU profile a plan asks for. If another profile
// is running in this process (go test -cpuprofile), the run goes on
// without one, saying so.
func startProfile(plan Plan, progress io.Writer) (*runProfile, error) {
	p := &runProfile{path: plan.CPUProfile, breakdown: plan.Breakdown, progress: progress}
	if plan.Trace != "" {
		f, err := os.Create(plan.Trace)
		if err != nil {
			return p, fmt.Errorf("bench: trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return p, fmt.Errorf("bench: trace: %w", err)
		}
		p.trace = f
	}
	if p.path == "" && !p.breakdown {
		return p, nil
	}
	if err := pprof.StartCPUProfile(&p.buf); err != nil {
		if p.path != "" {
			return p, fmt.Errorf("bench: cpu profile: %w", err)
		}
		fmt.Fprintf(progress, "bench: no CPU breakdown: %v\n", err)
		return p, nil
	}
	p.on, p.taken = true, true
	return p, nil
}

func (p *runProfile) stop() {
	if p.on {
		pprof.StopCPUProfile()
		p.on = false
	}
	if p.trace != nil {
		trace.Stop()
		if err := p.trace.Close(); err != nil {
			fmt.Fprintf(p.progress, "bench: trace: %v\n", err)
		}
		p.trace = nil
	}
}

// finish stops the profile, writes it where asked and fills res's
// breakdown from it, each category's share of res.CPUSecPer1000.
func (p *runProfile) finish(res *Result) error {
	if !p.taken {
		return nil
	}
	p.stop()
	if p.path != "" {
		if err := os.WriteFile(p.path, p.buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("bench: cpu profile: %w", err)
		}
	}
	if !p.breakdown {
		return nil
	}
	shares, n, err := AttributeCPU(bytes.NewReader(p.buf.Bytes()))
	if err != nil {
		return err
	}
	for i := range shares {
		shares[i].CPUSecPer1000 = shares[i].Share * res.CPUSecPer1000
	}
	res.CPUByCategory, res.ProfileSamples = shares, n
	return nil
}
