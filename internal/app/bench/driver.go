package bench

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/detector"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/app/pipeline"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

//go:embed agent.yaml
var agentScript []byte

// tenant is the tenant of every bench conversation.
const tenant = "bench"

// Result is what one bench run measured (`rein bench --json` prints it).
type Result struct {
	Mode            string  `json:"mode"` // max or rate
	Conversations   int     `json:"conversations"`
	Active          int     `json:"active_conversations,omitempty"`
	Turns           int     `json:"turns"`
	OfferedPerSec   float64 `json:"offered_per_s,omitempty"`
	TurnsPerSec     float64 `json:"turns_per_s"`
	P50Ms           float64 `json:"p50_ms"`
	P99Ms           float64 `json:"p99_ms"`
	CPUSecPer1000   float64 `json:"cpu_s_per_1000_turns"`
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	AvgEventBytes   int     `json:"avg_event_bytes"`
	Raw3HopMsgsPerS float64 `json:"raw_3hop_msgs_per_s"`
	Raw3HopP99Ms    float64 `json:"raw_3hop_p99_ms"`
	Ratio           float64 `json:"ratio"`
	// The same chain with rein's message count per turn (the last hop also
	// stores ShapeExtra messages: the steps and state records of a turn)
	// and rein's headers (a stored event's CloudEvents attributes and
	// Nats-Msg-Id, so the server deduplicates; the state records without),
	// in messages of the same total size, still without any application
	// work: the most rein's turns/s could be with its design on this
	// machine. CeilingRatio = RawShape ÷ Raw3Hop.
	ShapeExtra       int     `json:"shape_extra_msgs"`
	ShapeHops        int     `json:"shape_hops"`
	DuplicatesS      float64 `json:"duplicates_window_s"`
	ShapeHeaderBytes int     `json:"shape_header_bytes"`
	RawShapePerS     float64 `json:"raw_shape_turns_per_s"`
	CeilingRatio     float64 `json:"ceiling_ratio"`
	ShareOfCeiling   float64 `json:"share_of_ceiling"`
	// With --model-latency: each of the scripted agent's two model calls
	// per turn takes ModelLatencyMs. InFlightMax is the most turns
	// published and not yet answered at once; AddedP50/P99Ms are what rein
	// adds to a turn (end to end minus the model's time);
	// LittleCeiling is what Little's law allows with that many in flight
	// (in flight ÷ model time per turn).
	ModelLatencyMs float64 `json:"model_latency_ms,omitempty"`
	InFlightMax    int     `json:"in_flight_max,omitempty"`
	AddedP50Ms     float64 `json:"added_p50_ms,omitempty"`
	AddedP99Ms     float64 `json:"added_p99_ms,omitempty"`
	LittleCeiling  float64 `json:"little_ceiling_turns_per_s,omitempty"`
	// With --rate: the replies seen per second while the load was still
	// offered, from when the first turns could have been answered (the
	// model's time per turn plus a second) to the last turn offered, over
	// at least sustainedMin. TurnsPerSec counts the ramp and the last
	// turns' tail as well, so at a steady rate it stays below the offered
	// rate even when every turn keeps up; this figure does not.
	SustainedPerSec float64 `json:"sustained_turns_per_s,omitempty"`
	// With --inception-latency: each turn's inception takes that long.
	// With --speculate too, the same load runs a second time without
	// inception latency and without speculation, in the same bench run:
	// CleanP50Ms (every bench turn is clean) against
	// CleanP50MsNoInception shows what speculation hides.
	// With --model-error-rate/--model-429-rate: turns that ended without
	// a reply (handed to a human as agent_unavailable, or failed).
	NotAnswered           int     `json:"not_answered,omitempty"`
	InceptionLatencyMs    float64 `json:"inception_latency_ms,omitempty"`
	Speculate             bool    `json:"speculate,omitempty"`
	CleanP50Ms            float64 `json:"clean_p50_ms,omitempty"`
	CleanP50MsNoInception float64 `json:"clean_p50_ms_no_inception,omitempty"`
	// CPUByCategory is where the CPU of the pipeline's run went: a CPU
	// profile taken from the first turn offered to the last outcome stored,
	// each sample attributed to a category by its stack (AttributeCPU),
	// each share applied to CPUSecPer1000. ProfileSamples is the
	// profile's sample count (100 a CPU second). GOMAXPROCS is the run's;
	// 1 with --starved.
	CPUByCategory  []CPUShare `json:"cpu_by_category,omitempty"`
	ProfileSamples int        `json:"profile_samples,omitempty"`
	GOMAXPROCS     int        `json:"gomaxprocs"`
	// Hops is where a turn's end-to-end time went, leg by leg (HopIngest,
	// HopDetect, HopAgent, HopNotify), from the bench's clock and the
	// streams' stored timestamps, over the HopTurns turns answered by an
	// agent reply. With --nats-url the server's clock must agree with
	// this machine's.
	Hops     []Hop `json:"hops,omitempty"`
	HopTurns int   `json:"hop_turns,omitempty"`
	// RunQueueWaitPerCPU is how long the process's threads waited, ready
	// to run, on the kernel's run queue per CPU second they ran, over the
	// same window (Linux). It grows with the machine's other load, which
	// the latencies then measure as much as rein.
	RunQueueWaitPerCPU float64 `json:"run_queue_wait_per_cpu_s,omitempty"`
	// WirePerTurn is what each connection exchanged with the embedded
	// server per turn while the load ran (none with --nats-url or
	// --cluster): the protocol messages behind the stored ones.
	WirePerTurn []Wire `json:"wire_per_turn,omitempty"`

	// AllocBytesPerTurn and GCCyclesPer1000 are the whole process's heap
	// allocation and collections over the same window as the CPU figure
	// (the embedded server and the bench driver included): the collector's
	// share of the CPU and of the tail follows the allocation rate.
	AllocBytesPerTurn float64 `json:"alloc_bytes_per_turn"`
	GCCyclesPer1000   float64 `json:"gc_cycles_per_1000_turns"`
	// HeapGoal is the --heap-goal in force for the whole run, reference
	// chains included ("": GOGC alone).
	HeapGoal string `json:"heap_goal,omitempty"`
}

// ModelCalls is the scripted bench agent's model calls per turn.
const ModelCalls = 2

// Plan is what one bench run plays.
type Plan struct {
	// Conversations × Turns user turns are played.
	Conversations, Turns int
	// Active bounds the conversations in progress at once: they are played
	// in waves of Active conversations, each wave's turns interleaved,
	// the next wave starting when the last turn of this one is offered
	// (0: one wave of every conversation, the worst case for caches).
	Active int
	Rate   float64 // offered turns/s; 0: maximum rate
	// Workers bounds each stage's turns in flight in each process (0: the
	// stages' default, or REIN_BENCH_WORKERS): a replica's share of a
	// model's concurrency.
	Workers int
	RawMsgs int
	Persist string
	// LiveStepsAfter is the agent worker's (0: its default).
	LiveStepsAfter time.Duration
	StepEvents     string // the agent worker's (empty: its default)
	// StageConn is how the stages reach the embedded server, as serve's
	// (pipeline.Config.StageConn; "": in process).
	StageConn string
	Verbose   bool
	// Conversations kept in memory by the detector and the agent worker
	// (0: their defaults).
	DetectorCache, AgentCache int
	// The same caches' budgets in MiB, as serve's --detector-cache-mib and
	// --agent-cache-mib (0: their defaults).
	DetectorCacheMiB, AgentCacheMiB int
	MemoryLimit                     string // --memory-limit
	HeapGoal                        string // --heap-goal
	// Duplicates is the streams' Nats-Msg-Id window (0: the default, as
	// rein.yaml's streams.defaults.duplicates).
	Duplicates time.Duration
	MemProfile string // --memprofile
	// CPUProfile is where to write the profile of the pipeline's run
	// (--cpuprofile); Breakdown attributes it by category (the profile is
	// taken when either is set).
	CPUProfile string
	Breakdown  bool
	// Trace is where to write the runtime's execution trace of the same
	// window (--trace; go tool trace).
	Trace string
	// Starved pins GOMAXPROCS to 1 for the whole run, the reference chains
	// included: a busy machine's share of one core.
	Starved  bool
	NATSURL  string // --nats-url: an external server instead of the embedded one
	NATSNkey string // --nats-nkey: the seed of that server's user
	// ModelLatency is how long each scripted model call takes (0: none,
	// the CPU scenario).
	ModelLatency time.Duration
	// InceptionLatency simulates the inception model's time per turn;
	// Speculate runs the agent worker with speculative inception.
	InceptionLatency time.Duration
	Speculate        bool
	// Faults make the scripted agent model behave like a strained
	// endpoint (jitter, 503s, 429s); with any, the model goes through
	// rein's retry policy, breaker and adaptive limit.
	Faults llm.Faults
	// pipelineOnly skips the raw reference chains (the second run of a
	// speculation comparison).
	pipelineOnly bool
}

// Validate refuses a plan that cannot be played.
func (p Plan) Validate() error {
	if p.Conversations < 1 || p.Turns < 1 || p.Active < 0 || p.Rate < 0 || p.Duplicates < 0 || p.Workers < 0 {
		return fmt.Errorf("bench: --conversations and --turns must be positive, --active, --rate, --duplicates and --workers not negative")
	}
	return nil
}

// scriptWith is the bench agent's script, each call taking latency.
func scriptWith(latency time.Duration) (*llm.Script, error) {
	if latency <= 0 {
		return llm.ParseScript(agentScript)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(agentScript, &doc); err != nil {
		return nil, err
	}
	rules, _ := doc["rules"].([]any)
	for _, r := range rules {
		if m, ok := r.(map[string]any); ok {
			m["latency"] = latency.String()
		}
	}
	if d, ok := doc["default"].(map[string]any); ok {
		d["latency"] = latency.String()
	}
	raw, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return llm.ParseScript(raw)
}

// agentModel is the bench's scripted agent, each call taking
// plan.ModelLatency, behind rein's retry policy, breaker and adaptive
// limit when plan.Faults make it fail.
func agentModel(plan Plan) (llm.Client, error) {
	script, err := scriptWith(plan.ModelLatency)
	if err != nil {
		return nil, err
	}
	var agent llm.Client = llm.NewScripted(script)
	if plan.Faults != (llm.Faults{}) {
		plan.Faults.Seed, plan.Faults.RetryAfter = 1, time.Second
		return llm.Manage(llm.WithFaults(agent, plan.Faults), llm.Config{Endpoint: llm.PurposeAgent, RetryBaseDelay: 100 * time.Millisecond}, nil)
	}
	return agent, nil
}

// stages are the bench pipeline's stage configuration: the rules module
// (taking plan.InceptionLatency per turn), the airline domain's tools, the
// given agent.
func stages(plan Plan, agent llm.Client) (pipeline.Stages, error) {
	m, tax, err := pipeline.Modules{Module: inception.ModuleRules, Plan: planted.PlanTemplate}.Build(nil)
	if err != nil {
		return pipeline.Stages{}, err
	}
	if plan.InceptionLatency > 0 {
		m = delayedModule{Module: m, d: plan.InceptionLatency}
	}
	w := cmp.Or(plan.Workers, workers())
	return pipeline.Stages{
		Detector: detector.Config{Domain: taubench.Airline, Timeout: 5 * time.Second, Workers: w,
			MaxConversations: plan.DetectorCache, MaxCacheBytes: int64(plan.DetectorCacheMiB) << 20, TaxonomyVersion: tax.Version},
		AgentWorker: agentworker.Config{Domain: taubench.Airline, Workers: w, MaxSteps: 30, Backend: agentworker.BackendDomain,
			Persist: plan.Persist, LiveStepsAfter: plan.LiveStepsAfter, StepEvents: plan.StepEvents, MaxConversations: plan.AgentCache,
			MaxCacheBytes: int64(plan.AgentCacheMiB) << 20, Speculate: plan.Speculate},
		Given: pipeline.Given{Module: m, AgentModel: agent},
	}, nil
}

// Run plays plan on a pipeline of its own (an embedded server, or
// plan.NATSURL) and measures the raw reference chains; progress notes go
// to progress.
func Run(ctx context.Context, plan Plan, progress io.Writer) (Result, error) {
	if plan.Starved {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	dir, err := os.MkdirTemp("", "rein-bench-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	agent, err := agentModel(plan)
	if err != nil {
		return Result{}, err
	}
	log, err := telemetry.NewLoggerFormat(os.Stderr, "error", "")
	if err != nil {
		return Result{}, err
	}
	// The goal holds for the whole run, so that the reference chains run
	// under the same collector as the pipeline.
	stopHeapGoal, heapGoal, err := pipeline.ApplyHeapGoal(plan.HeapGoal, log)
	if err != nil {
		return Result{}, err
	}
	defer stopHeapGoal()
	cfg := pipeline.Config{Name: "rein-bench", Logger: log, DataDir: filepath.Join(dir, "rein"), MaxEventBytes: streams.DefaultMaxEventBytes,
		MemoryLimit: plan.MemoryLimit, HeapGoal: plan.HeapGoal, Connect: natsserver.ConnectConfig{URL: plan.NATSURL, NkeyFile: plan.NATSNkey}, Provision: natsserver.DefaultProvision(),
		StageConn: plan.StageConn}
	if plan.StageConn == pipeline.StageConnLoopback {
		// A port of its own on a loopback address, for the stages alone.
		cfg.Listen = "127.0.0.1:0"
	}
	if plan.NATSURL != "" {
		// One process signs and checks every task of the run: a key of
		// its own, in the run's directory.
		cfg.TaskKeyFile = filepath.Join(dir, "task-key")
		if _, err := natsserver.EnsureSecretFile(cfg.TaskKeyFile, 32); err != nil {
			return Result{}, err
		}
	}
	if plan.Duplicates > 0 {
		// As rein.yaml's streams.defaults.duplicates.
		cfg.Provision.Defaults.Duplicate = plan.Duplicates
	}
	so, err := stages(plan, agent)
	if err != nil {
		return Result{}, err
	}
	rt, err := pipeline.Start(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	if err := freshServer(ctx, rt); err != nil {
		rt.Close()
		return Result{}, err
	}
	names, _ := pipeline.ResolveStages([]string{"all"})
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(sctx, so, names) }()
	err = waitPulling(ctx, rt.JS, done, 1)
	var res Result
	var clock *turnClock
	if err == nil {
		wire0 := wireCounts(rt.Server())
		res, clock, err = driveBench(ctx, rt.NC, rt.Pub, plan, progress)
		res.WirePerTurn = wirePerTurn(wire0, wireCounts(rt.Server()), cfg.Name, res.Turns)
		// The pipeline's peak, read before the reference chains run in
		// this process and raise the high-water mark with their own.
		res.PeakRSSMB = PeakRSSMB()
		res.DuplicatesS = rt.Prov.StreamConfig(bus.StreamSteps).Duplicates.Seconds()
		if err == nil && plan.MemProfile != "" {
			err = writeHeapProfile(plan.MemProfile)
		}
	}
	cancel()
	<-done
	var hdr Headers
	if err == nil {
		if err = readStored(ctx, rt.JS, clock); err == nil {
			res.Hops, res.HopTurns = clock.hops()
		}
	}
	if err == nil {
		res.AvgEventBytes = avgEventBytes(ctx, rt)
		var records int
		res.ShapeExtra, records = extraStores(ctx, rt, res.Turns, plan.Persist)
		hdr, err = eventHeaders(ctx, rt, records)
	}
	if plan.Verbose {
		mfs, _ := rt.Reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "rein_stage_handle_seconds" || mf.GetName() == "rein_agentworker_turn_seconds" || mf.GetName() == "rein_detector_inception_seconds" {
				for _, m := range mf.GetMetric() {
					h := m.GetHistogram()
					fmt.Fprintf(progress, "%s %v n=%d mean=%.2fms\n", mf.GetName(), m.GetLabel(), h.GetSampleCount(), h.GetSampleSum()/float64(h.GetSampleCount())*1000)
				}
			}
		}
	}
	rt.Close()
	if err != nil {
		return res, err
	}
	res.GOMAXPROCS = runtime.GOMAXPROCS(0)
	if heapGoal {
		res.HeapGoal = plan.HeapGoal
	}
	if plan.InceptionLatency > 0 {
		res.InceptionLatencyMs, res.Speculate, res.CleanP50Ms = eval.Ms(plan.InceptionLatency), plan.Speculate, res.P50Ms
	}
	if plan.pipelineOnly {
		return res, nil
	}
	if plan.InceptionLatency > 0 && plan.Speculate {
		fmt.Fprintf(progress, "rein: clean p50 %.1f ms with speculation; now the same load without inception latency or speculation…\n", res.P50Ms)
		base := plan
		base.InceptionLatency, base.Speculate, base.pipelineOnly, base.MemProfile, base.CPUProfile, base.Breakdown, base.Trace = 0, false, true, "", "", false, ""
		noInc, err := Run(ctx, base, progress)
		if err != nil {
			return res, err
		}
		res.CleanP50MsNoInception = noInc.P50Ms
	}
	fmt.Fprintf(progress, "rein: %.0f turns/s; now the raw JetStream reference (%d msgs of %d B)…\n", res.TurnsPerSec, plan.RawMsgs, res.AvgEventBytes)
	raw, err := RunRawChain(ctx, filepath.Join(dir, "raw"), plan.RawMsgs, res.AvgEventBytes)
	if err != nil {
		return res, err
	}
	// rein's shape: the detector stores the detection with the task; the
	// agent worker stores the extras.
	side := []int{1, res.ShapeExtra}
	res.ShapeHops = len(side)
	fmt.Fprintf(progress, "raw 3-hop: %.0f msgs/s; now rein's shape: %d hops, %d extra stores per turn, its headers…\n", raw.MsgsPerSec, res.ShapeHops, res.ShapeExtra)
	shape, err := RunRawShape(ctx, filepath.Join(dir, "shape"), plan.RawMsgs, res.AvgEventBytes, side, hdr)
	if err != nil {
		return res, err
	}
	res.compare(raw, shape)
	return res, nil
}

// compare puts rein's throughput beside the raw 3-hop chain's and the
// chain shaped like rein's (its ceiling).
func (r *Result) compare(raw, shape RawChainResult) {
	r.Raw3HopMsgsPerS, r.Raw3HopP99Ms = raw.MsgsPerSec, raw.P99Ms
	r.Ratio = r.TurnsPerSec / raw.MsgsPerSec
	r.RawShapePerS, r.ShapeHeaderBytes = shape.MsgsPerSec, r.AvgEventBytes-shape.PayloadB
	r.CeilingRatio = shape.MsgsPerSec / raw.MsgsPerSec
	r.ShareOfCeiling = r.TurnsPerSec / shape.MsgsPerSec
}

// freshServer refuses a server that already holds rein turns: the run's
// counts and latencies would mix with them.
func freshServer(ctx context.Context, rt *pipeline.Process) error {
	st, err := rt.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if n := st.CachedInfo().State.Msgs; n > 0 {
		return fmt.Errorf("bench: the server already holds %d rein turns; run against a fresh server", n)
	}
	return nil
}

// writeHeapProfile writes the heap profile: what is live now (after a
// collection, so that inuse_space is exact) and, as alloc_space,
// everything allocated so far.
func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	return f.Close()
}

// waitPulling waits until the stages' consumers are pulling, so that the
// offered load does not queue behind their start-up (consumers created,
// first pull requests out), which would count as latency of the first turns.
func waitPulling(ctx context.Context, js jetstream.JetStream, done chan error, partitions int) error {
	deadline := time.Now().Add(30 * time.Second)
	type durable struct{ stream, durable string }
	stageDurables := []durable{{bus.StreamTurns, bus.DurableDetector}, {bus.StreamTasks, bus.DurableAgentWorker}}
	pulling := stageDurables
	if partitions > 1 {
		pulling = nil
		for _, d := range stageDurables {
			for p := range partitions {
				pulling = append(pulling, durable{d.stream, streams.PartitionDurable(d.durable, p)})
			}
		}
	}
	for _, c := range pulling {
		for {
			if cons, err := js.Consumer(ctx, c.stream, c.durable); err == nil {
				if info, err := cons.Info(ctx); err == nil && info.NumWaiting > 0 {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bench: consumer %s is not pulling after 30s", c.durable)
			}
			select {
			case err := <-done:
				done <- err // the caller still waits for it
				return fmt.Errorf("bench: the stages stopped before the load started: %v", err)
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}

// driveBench offers the turns and times each from publish to the agent's
// reply, seen on a plain subscription to the agent-turn subjects; the
// clock it returns holds both instants of every turn.
func driveBench(ctx context.Context, nc *nats.Conn, pub *streams.Publisher, plan Plan, progress io.Writer) (Result, *turnClock, error) {
	convs, turns, rate := plan.Conversations, plan.Turns, plan.Rate
	total := convs * turns
	res := Result{Mode: "max", Conversations: convs, Turns: total, OfferedPerSec: rate, Active: plan.Active}
	if rate > 0 {
		res.Mode = fmt.Sprintf("offered %.0f turns/s", rate)
	}
	wave := plan.Active
	if wave == 0 || wave > convs {
		wave = convs
	}
	var mu sync.Mutex
	base := time.Now()
	clock := newTurnClock(base, convs, turns)
	published, inFlightMax := 0, 0
	var replies atomic.Int64
	var last atomic.Int64
	allIn := make(chan struct{})
	var notAnswered atomic.Int64
	done := func(m *nats.Msg) {
		// Every outcome of a turn ends it: a reply, or (with injected
		// faults) an escalation or an unanswered record. An outcome seen
		// again (published twice, stored once) counts once.
		turn, _ := strconv.Atoi(m.Header.Get(bus.HeaderCEPrefix + schemas.ExtTurn))
		i, ok := clock.index(m.Header.Get(bus.HeaderCEPrefix+schemas.ExtConversation), turn)
		now := time.Since(base)
		mu.Lock()
		if !ok || clock.at[atPublished][i] == unknown || clock.at[atSeen][i] != unknown {
			mu.Unlock()
			return
		}
		clock.at[atSeen][i] = now
		mu.Unlock()
		if !strings.HasSuffix(m.Subject, ".agent") {
			notAnswered.Add(1)
		}
		last.Store(int64(now))
		if replies.Add(1) == int64(total) {
			close(allIn)
		}
	}
	for _, subj := range []string{bus.TurnSubject(tenant, "*", schemas.RoleAgent), bus.EscalationSubject(tenant, "*"), bus.UnansweredSubject(tenant, "*")} {
		sub, err := nc.Subscribe(subj, done)
		if err != nil {
			return res, nil, err
		}
		defer sub.Unsubscribe()
		_ = sub.SetPendingLimits(-1, -1)
	}

	prof, err := startProfile(plan, progress)
	if err != nil {
		return res, nil, err
	}
	defer prof.stop()
	cpu0, waits0, heap0 := CPUTime(), threadWaits("/proc/self"), readHeapUse()
	start := time.Since(base)
	texts := []string{"Can you show me reservation Q7RM2K?", "What is the status of my booking?", "Thanks, and the baggage allowance?"}
	batch := make([]streams.Out, 0, 256)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := pub.PublishAll(ctx, batch...)
		batch = batch[:0]
		return err
	}
	// Open loop: with --rate, turn i is due at start + i/rate; each pass
	// publishes, as one pipelined batch, every turn that has come due.
	pubStart := time.Now()
	due := func(i int) time.Duration { return time.Duration(float64(i) / rate * float64(time.Second)) }
	i := 0
	lastNote := time.Now()
	for first := 0; first < convs; first += wave {
		for turn := 1; turn <= turns; turn++ {
			for c := first; c < min(first+wave, convs); c++ {
				if time.Since(lastNote) >= 10*time.Second {
					fmt.Fprintf(progress, "  %d of %d turns offered, %d answered…\n", i, total, replies.Load())
					lastNote = time.Now()
				}
				conv := convName(c)
				meta := schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}
				// The driver stands for the platform: the detector's consumer
				// enforces the schema; checking here too would bill the
				// platform's work to rein.
				ev, err := schemas.BuildEvent(schemas.TypeTurn, schemas.EventID("turn", tenant, conv, turn)+"-user", "/rein/bench", meta,
					schemas.Turn{Role: schemas.RoleUser, Text: texts[(c+turn)%len(texts)], Turn: turn})
				if err != nil {
					return res, nil, err
				}
				if rate > 0 {
					if wait := due(i) - time.Since(pubStart); wait > 0 {
						if err := flush(); err != nil {
							return res, nil, err
						}
						if wait = due(i) - time.Since(pubStart); wait > 0 {
							time.Sleep(wait)
						}
					}
				}
				i++
				mu.Lock()
				clock.at[atPublished][c*turns+turn-1] = time.Since(base)
				published++
				inFlightMax = max(inFlightMax, published-int(replies.Load()))
				mu.Unlock()
				batch = append(batch, streams.Out{Stream: bus.StreamTurns, Subject: bus.TurnSubject(tenant, conv, schemas.RoleUser), Event: &ev})
				if len(batch) == cap(batch) {
					if err := flush(); err != nil {
						return res, nil, err
					}
				}
			}
		}
	}
	if err := flush(); err != nil {
		return res, nil, err
	}
	offered := time.Since(base)
	timeout := time.Duration(total/20+60) * time.Second
	for done := false; !done; {
		select {
		case <-allIn:
			done = true
		case <-ctx.Done():
			return res, nil, ctx.Err()
		case <-time.After(10 * time.Second):
			fmt.Fprintf(progress, "  %d of %d replies…\n", replies.Load(), total)
			if time.Since(base) > timeout {
				return res, nil, fmt.Errorf("bench: only %d of %d turns answered within %s", replies.Load(), total, timeout)
			}
		}
	}
	cpu, heap := CPUTime()-cpu0, readHeapUse().since(heap0)
	if waits0 != nil && cpu > 0 {
		res.RunQueueWaitPerCPU = waitedSince(waits0, threadWaits("/proc/self")).Seconds() / cpu.Seconds()
	}
	// Stop profiling before reading the profile.
	prof.stop()
	mu.Lock()
	defer mu.Unlock()
	res.NotAnswered = int(notAnswered.Load())
	res.summarize(clock.latencies(), time.Duration(last.Load())-start, cpu, plan.ModelLatency, inFlightMax)
	res.AllocBytesPerTurn, res.GCCyclesPer1000 = heap.perTurn(res.Turns)
	if rate > 0 {
		settle := time.Duration(ModelCalls)*plan.ModelLatency + time.Second
		res.SustainedPerSec = clock.seenPerSec(start+settle, offered)
	}
	return res, clock, prof.finish(&res)
}

// summarize fills the run's figures from every turn's latency, the time
// from the first turn offered to the last answered, the CPU time spent
// meanwhile and, with a model latency, the most turns in flight.
func (r *Result) summarize(lat []time.Duration, elapsed, cpu, modelLatency time.Duration, inFlightMax int) {
	r.TurnsPerSec = float64(r.Turns) / elapsed.Seconds()
	r.CPUSecPer1000 = cpu.Seconds() / float64(r.Turns) * 1000
	r.P50Ms, r.P99Ms = eval.Ms(eval.Percentile(lat, 50)), eval.Ms(eval.Percentile(lat, 99))
	if modelLatency > 0 {
		model := time.Duration(ModelCalls) * modelLatency
		r.ModelLatencyMs = eval.Ms(modelLatency)
		r.InFlightMax = inFlightMax
		r.AddedP50Ms, r.AddedP99Ms = r.P50Ms-eval.Ms(model), r.P99Ms-eval.Ms(model)
		r.LittleCeiling = float64(inFlightMax) / model.Seconds()
	}
}

// avgEventBytes is the mean stored size of rein's events in this run.
func avgEventBytes(ctx context.Context, rt *pipeline.Process) int {
	var msgs, bytes uint64
	for _, name := range []string{bus.StreamTurns, bus.StreamDetections, bus.StreamTasks, bus.StreamSteps} {
		s, err := rt.JS.Stream(ctx, name)
		if err != nil {
			continue
		}
		if info, err := s.Info(ctx); err == nil {
			msgs += info.State.Msgs
			bytes += info.State.Bytes
		}
	}
	if msgs == 0 {
		return 512
	}
	return int(bytes / msgs)
}

// eventHeaders is the header set of a stored user turn, the template of
// the ceiling chain's messages; the turn's state records carry none.
func eventHeaders(ctx context.Context, rt *pipeline.Process, records int) (Headers, error) {
	h := Headers{Plain: records}
	s, err := rt.JS.Stream(ctx, bus.StreamTurns)
	if err != nil {
		return h, fmt.Errorf("bench: %w", err)
	}
	m, err := s.GetLastMsgForSubject(ctx, streams.StoredSubject(s, bus.TurnSubject(tenant, convName(0), schemas.RoleUser)))
	if err != nil {
		return h, fmt.Errorf("bench: a stored user turn: %w", err)
	}
	// A direct get adds where and when the message was stored; those
	// headers are not part of the message.
	h.Template = m.Header
	for _, k := range []string{jetstream.StreamHeader, jetstream.SequenceHeader, jetstream.TimeStampHeaer, jetstream.SubjectHeader} {
		h.Template.Del(k)
	}
	return h, nil
}

// extraStores is what a turn stored beyond the three hops' outputs and the
// agent turn, counted in the streams after the run: its steps (REIN_STEPS)
// and its state records (REIN_CONVERSATIONS, every record ever stored:
// the bucket keeps only the newest of each key). records is the second
// part alone; the ceiling chain stores those without headers. persist
// gives the count's fallback when a stream cannot be read.
func extraStores(ctx context.Context, rt *pipeline.Process, turns int, persist string) (extra, records int) {
	records = 2 // one after the bench agent's tool result, one at the end
	if persist == "turn" {
		records = 1
	}
	if turns == 0 {
		return records, records
	}
	perTurn := func(name string, stored func(jetstream.StreamState) uint64) (int, bool) {
		s, err := rt.JS.Stream(ctx, name)
		if err != nil {
			return 0, false
		}
		info, err := s.Info(ctx)
		if err != nil {
			return 0, false
		}
		return int((stored(info.State) + uint64(turns)/2) / uint64(turns)), true
	}
	if n, ok := perTurn(bus.StreamConversations, func(st jetstream.StreamState) uint64 { return st.LastSeq }); ok {
		records = n
	}
	steps, _ := perTurn(bus.StreamSteps, func(st jetstream.StreamState) uint64 { return st.Msgs })
	return steps + records, records
}

// convName names the bench's conversation c.
func convName(c int) string { return fmt.Sprintf("b%05d", c) }

// workers is the per-stage in-flight limit of the benchmark
// (REIN_BENCH_WORKERS; default 0, serve's default).
func workers() int {
	if n, err := strconv.Atoi(os.Getenv("REIN_BENCH_WORKERS")); err == nil && n > 0 {
		return n
	}
	return 0
}
