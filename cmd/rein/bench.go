package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
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
	"github.com/spf13/cobra"

	"github.com/reinception/rein/internal/app/bench"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

//go:embed demodata/bench-agent.yaml
var benchAgentScript []byte

const benchTenant = "bench"

// benchResult is what `rein bench --json` prints.
type benchResult struct {
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
	ShapeExtra int `json:"shape_extra_msgs"`
	ShapeHops  int `json:"shape_hops"`
	// Injector is "fused" (the detector publishes each task with its
	// detection: two hops per turn) or "separate" (three hops).
	Injector         string  `json:"injector"`
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
}

// benchModelCalls is the scripted bench agent's model calls per turn.
const benchModelCalls = 2

func init() { register(newBenchCmd) }

// benchPlan is what one bench run plays.
type benchPlan struct {
	convs, turns int
	// active bounds the conversations in progress at once: they are played
	// in waves of active conversations, each wave's turns interleaved,
	// the next wave starting when the last turn of this one is offered
	// (0: one wave of every conversation, the worst case for caches).
	active  int
	rate    float64 // offered turns/s; 0: maximum rate
	rawMsgs int
	persist string
	// separate runs the injector as its own consumer (--fuse-injector=false).
	separate bool
	verbose  bool
	// Conversations kept in memory by the detector and the agent worker
	// (0: their defaults).
	detectorCache, agentCache int
	memLimit                  string // --memory-limit
	// duplicates is the streams' Nats-Msg-Id window (0: the default, as
	// rein.yaml's streams.defaults.duplicates).
	duplicates time.Duration
	memProfile string // --memprofile
	natsURL    string // --nats-url: an external server instead of the embedded one
	natsNkey   string // --nats-nkey: the seed of that server's user
	// modelLatency is how long each scripted model call takes (0: none,
	// the CPU scenario).
	modelLatency time.Duration
	// inceptionLatency simulates the inception model's time per turn;
	// speculate runs the agent worker with speculative inception.
	inceptionLatency time.Duration
	speculate        bool
	// faults make the scripted agent model behave like a strained
	// endpoint (jitter, 503s, 429s); with any, the model goes through
	// rein's retry policy, breaker and adaptive limit.
	faults llm.Faults
	// pipelineOnly skips the raw reference chains (the second run of a
	// speculation comparison).
	pipelineOnly bool
}

// benchScript is the bench agent's script, each call taking latency.
func benchScript(latency time.Duration) (*llm.Script, error) {
	if latency <= 0 {
		return llm.ParseScript(benchAgentScript)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(benchAgentScript, &doc); err != nil {
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

func newBenchCmd() *cobra.Command {
	var plan benchPlan
	var quick, asJSON bool
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark the whole pipeline against a raw JetStream chain measured in the same run",
		Long: `bench is a benchmark, not a test. It starts an embedded server with file storage and every stage
(the rules inception module, the scripted agent with zero latency and one tool call per turn), plays
--conversations × --turns user turns, and reports turns/s, end-to-end latency (user turn published →
agent reply stored) p50/p99, CPU seconds per 1,000 turns and the pipeline's peak RSS (read before the
reference chains run in the same process). In the same run it measures a
raw JetStream chain of three hops (consume, publish, ack) with rein's average event size, on a fresh
server of its own, and reports the ratio of the two throughputs; then a raw chain shaped like rein:
its hops (two with the injector fused into the detector, as serve runs it; three with
--separate-injector), rein's message count per turn (the first hop also stores the detection, the
last the turn's steps and state records) and rein's headers (a stored event's CloudEvents
attributes and Nats-Msg-Id, which the server deduplicates), in messages of the same size, with no
application work: the ceiling of rein's design on this machine.

Without --rate, turns are offered at maximum rate (latency then measures the backlog); with --rate N
they are offered open-loop at N turns/s. --quick finishes within a minute.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quick {
				if !cmd.Flags().Changed("conversations") {
					plan.convs = 2000
				}
				if !cmd.Flags().Changed("turns") {
					plan.turns = 5
				}
				if !cmd.Flags().Changed("raw-msgs") {
					plan.rawMsgs = 15000
				}
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if plan.convs < 1 || plan.turns < 1 || plan.active < 0 || plan.rate < 0 || plan.duplicates < 0 {
				return fmt.Errorf("bench: --conversations and --turns must be positive, --active, --rate and --duplicates not negative")
			}
			res, err := runBench(cmd.Context(), plan, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprintf(out, "rein pipeline: %d turns (%d conversations), %s\n", res.Turns, res.Conversations, res.Mode)
			fmt.Fprintf(out, "  %.0f turns/s · p50 %.1f ms · p99 %.1f ms · %.2f CPU s per 1,000 turns · peak RSS %.0f MB\n",
				res.TurnsPerSec, res.P50Ms, res.P99Ms, res.CPUSecPer1000, res.PeakRSSMB)
			if res.CleanP50MsNoInception > 0 {
				fmt.Fprintf(out, "  inception %.0f ms, speculation on: clean-turn p50 %.1f ms; the same load without inception: %.1f ms (%+.1f %%)\n",
					res.InceptionLatencyMs, res.CleanP50Ms, res.CleanP50MsNoInception, 100*(res.CleanP50Ms/res.CleanP50MsNoInception-1))
			}
			if res.ModelLatencyMs > 0 {
				fmt.Fprintf(out, "  model latency %.0f ms × %d calls per turn: %d turns in flight at most · rein adds p50 %.1f ms, p99 %.1f ms · Little's-law ceiling %.0f turns/s\n",
					res.ModelLatencyMs, benchModelCalls, res.InFlightMax, res.AddedP50Ms, res.AddedP99Ms, res.LittleCeiling)
			}
			if res.NotAnswered > 0 {
				fmt.Fprintf(out, "  %d turns ended without a reply (handed to a human as agent_unavailable, or failed)\n", res.NotAnswered)
			}
			fmt.Fprintf(out, "raw JetStream 3-hop chain (%d B payload): %.0f msgs/s · p99 %.1f ms\n", res.AvgEventBytes, res.Raw3HopMsgsPerS, res.Raw3HopP99Ms)
			fmt.Fprintf(out, "ratio (rein turns/s ÷ raw 3-hop msgs/s): %.2f\n", res.Ratio)
			fmt.Fprintf(out, "ceiling (a raw chain of rein's %d hops storing its %d extra messages per turn, with its %d B of headers): %.0f turns/s, ratio %.2f; rein reaches %.0f %% of it\n",
				res.ShapeHops, res.ShapeExtra, res.ShapeHeaderBytes, res.RawShapePerS, res.CeilingRatio, 100*res.ShareOfCeiling)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&plan.convs, "conversations", 2000, "conversations")
	fs.IntVar(&plan.turns, "turns", 10, "user turns per conversation")
	fs.IntVar(&plan.active, "active", 0, "conversations in progress at once, played in waves (0: all at once)")
	fs.Float64Var(&plan.rate, "rate", 0, "offered turns/s (0: maximum rate)")
	fs.IntVar(&plan.rawMsgs, "raw-msgs", 50000, "messages through the raw reference chain")
	fs.BoolVar(&quick, "quick", false, "a run that finishes within a minute (2,000 × 5 turns, 15,000 raw messages)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.IntVar(&plan.detectorCache, "detector-cache", 0, "conversations the detector keeps in memory (0: its default, 10,000)")
	fs.IntVar(&plan.agentCache, "agent-cache", 0, "conversations the agent worker keeps in memory (0: its default, 10,000)")
	fs.StringVar(&plan.memLimit, "memory-limit", "", "soft memory limit of the process, as serve's (e.g. 600MiB)")
	fs.DurationVar(&plan.duplicates, "duplicates", 0, "the streams' duplicate window, as rein.yaml's streams.defaults.duplicates (0: the default, 2m); the server's de-duplication memory is proportional to it")
	fs.StringVar(&plan.persist, "agent-persist", "step", "agent state writes: step (after every tool result) or turn")
	fs.BoolVar(&plan.separate, "separate-injector", false, "run the injector as its own consumer of REIN_DETECTIONS, as serve --fuse-injector=false does (default: fused into the detector)")
	fs.BoolVar(&plan.verbose, "verbose", false, "print each stage's mean handling time (delivery to ack, queueing included) on stderr")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fs.StringVar(&plan.natsNkey, "nats-nkey", "", "nkey seed file of the --nats-url server's user (for a rein serve, DATA-DIR/nats-keys/admin.nk)")
	fs.StringVar(&plan.natsURL, "nats-url", "", "run the pipeline against this NATS server instead of an embedded one, so that peak RSS is rein's own; it must hold no rein turns yet (use a fresh server: the run leaves its streams there); the reference chains stay embedded")
	fs.DurationVar(&plan.inceptionLatency, "inception-latency", 0, "each turn's inception takes this long (a simulator of the inception model's time around the rules module)")
	fs.BoolVar(&plan.speculate, "speculate", false, "speculative inception in the agent worker; with --inception-latency the same load also runs without inception latency and without speculation, reporting both clean-turn p50s")
	fs.DurationVar(&plan.faults.Jitter, "model-jitter", 0, "each model call takes up to this much longer (uniform)")
	fs.Float64Var(&plan.faults.ErrorRate, "model-error-rate", 0, "share of model calls that fail with HTTP 503 (retried, then the breaker)")
	fs.Float64Var(&plan.faults.RateLimitRate, "model-429-rate", 0, "share of model calls answered 429 with Retry-After 1s (the adaptive limit backs off)")
	fs.DurationVar(&plan.modelLatency, "model-latency", 0, "each scripted agent model call takes this long (two calls per turn): the scenario of a real model's time, reporting in-flight turns, rein's added latency and Little's-law ceiling (0: the CPU scenario)")
	fs.StringVar(&plan.memProfile, "memprofile", "", "write a heap profile of the pipeline, taken when the last reply is stored, to this file (go tool pprof -sample_index=inuse_space for what is live then, alloc_space for what the run allocated)")
	return cmd
}

func runBench(ctx context.Context, plan benchPlan, progress interface{ Write([]byte) (int, error) }) (benchResult, error) {
	dir, err := os.MkdirTemp("", "rein-bench-")
	if err != nil {
		return benchResult{}, err
	}
	defer os.RemoveAll(dir)
	script, err := benchScript(plan.modelLatency)
	if err != nil {
		return benchResult{}, err
	}
	var agent llm.Client = llm.NewScripted(script)
	if plan.faults != (llm.Faults{}) {
		plan.faults.Seed, plan.faults.RetryAfter = 1, time.Second
		if agent, err = llm.Manage(llm.WithFaults(agent, plan.faults), llm.Config{Endpoint: llm.PurposeAgent, RetryBaseDelay: 100 * time.Millisecond}, nil); err != nil {
			return benchResult{}, err
		}
	}
	sf := serverFlags{dataDir: filepath.Join(dir, "rein"), logLevel: "error", maxBytes: streams.DefaultMaxEventBytes, memLimit: plan.memLimit,
		nats: natsFlags{url: plan.natsURL, nkey: plan.natsNkey}}
	if plan.natsURL != "" {
		// One process signs and checks every task of the run: a key of
		// its own, in the run's directory.
		sf.taskKey = filepath.Join(dir, "task-key")
		if _, err := streams.EnsureSecretFile(sf.taskKey, 32); err != nil {
			return benchResult{}, err
		}
	}
	so := stageOptions{domain: "airline", detectorTimeout: 5 * time.Second, workers: benchWorkers(), maxSteps: 30, agentBackend: "domain", agentPersist: plan.persist,
		fuseInjector: !plan.separate, detectorCache: plan.detectorCache, agentCache: plan.agentCache,
		inceptionLatency: plan.inceptionLatency, speculate: plan.speculate,
		modules: moduleFlags{module: "rules", plan: "template"}, agentModel: agent}
	var file *fileConfig
	if plan.duplicates > 0 {
		if file, err = parseFileConfig("bench", fmt.Appendf(nil, "streams:\n  defaults: {duplicates: %s}\n", plan.duplicates)); err != nil {
			return benchResult{}, err
		}
	}
	rt, err := startRuntime(ctx, &sf, file, "rein-bench")
	if err != nil {
		return benchResult{}, err
	}
	if err := freshServer(ctx, rt); err != nil {
		rt.close()
		return benchResult{}, err
	}
	rt.stages = &so
	names, _ := resolveStages([]string{"all"})
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runStages(sctx, rt, names) }()
	err = waitPulling(ctx, rt, done, !plan.separate)
	var res benchResult
	if err == nil {
		res, err = driveBench(ctx, rt, plan, progress)
		// The pipeline's peak, read before the reference chains run in
		// this process and raise the high-water mark with their own.
		res.PeakRSSMB = bench.PeakRSSMB()
		res.DuplicatesS = rt.prov.StreamConfig(streams.StreamSteps).Duplicates.Seconds()
		if err == nil && plan.memProfile != "" {
			err = writeHeapProfile(plan.memProfile)
		}
	}
	cancel()
	<-done
	var hdr bench.Headers
	if err == nil {
		res.AvgEventBytes = avgEventBytes(ctx, rt)
		res.ShapeExtra = extraStores(ctx, rt, res.Turns, plan.persist)
		hdr, err = eventHeaders(ctx, rt, plan.persist)
	}
	if plan.verbose {
		mfs, _ := rt.reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "rein_stage_handle_seconds" || mf.GetName() == "rein_agent_turn_seconds" || mf.GetName() == "rein_detector_inception_seconds" {
				for _, m := range mf.GetMetric() {
					h := m.GetHistogram()
					fmt.Fprintf(progress, "%s %v n=%d mean=%.2fms\n", mf.GetName(), m.GetLabel(), h.GetSampleCount(), h.GetSampleSum()/float64(h.GetSampleCount())*1000)
				}
			}
		}
	}
	rt.close()
	if err != nil {
		return res, err
	}
	if plan.inceptionLatency > 0 {
		res.InceptionLatencyMs, res.Speculate, res.CleanP50Ms = eval.Ms(plan.inceptionLatency), plan.speculate, res.P50Ms
	}
	if plan.pipelineOnly {
		return res, nil
	}
	if plan.inceptionLatency > 0 && plan.speculate {
		fmt.Fprintf(progress, "rein: clean p50 %.1f ms with speculation; now the same load without inception latency or speculation…\n", res.P50Ms)
		base := plan
		base.inceptionLatency, base.speculate, base.pipelineOnly, base.memProfile = 0, false, true, ""
		noInc, err := runBench(ctx, base, progress)
		if err != nil {
			return res, err
		}
		res.CleanP50MsNoInception = noInc.P50Ms
	}
	fmt.Fprintf(progress, "rein: %.0f turns/s; now the raw JetStream reference (%d msgs of %d B)…\n", res.TurnsPerSec, plan.rawMsgs, res.AvgEventBytes)
	raw, err := bench.RunRawChain(ctx, filepath.Join(dir, "raw"), plan.rawMsgs, res.AvgEventBytes)
	if err != nil {
		return res, err
	}
	res.Raw3HopMsgsPerS, res.Raw3HopP99Ms = raw.MsgsPerSec, raw.P99Ms
	res.Ratio = res.TurnsPerSec / raw.MsgsPerSec
	// rein's shape: the detector stores the detection and hands on the
	// task, in its own hop or fused; the agent worker stores the extras.
	side := []int{0, 0, res.ShapeExtra}
	res.Injector = "separate"
	if !plan.separate {
		side, res.Injector = []int{1, res.ShapeExtra}, "fused"
	}
	res.ShapeHops = len(side)
	fmt.Fprintf(progress, "raw 3-hop: %.0f msgs/s; now rein's shape: %d hops, %d extra stores per turn, its headers…\n", raw.MsgsPerSec, res.ShapeHops, res.ShapeExtra)
	shape, err := bench.RunRawShape(ctx, filepath.Join(dir, "shape"), plan.rawMsgs, res.AvgEventBytes, side, hdr)
	if err != nil {
		return res, err
	}
	res.RawShapePerS, res.ShapeHeaderBytes = shape.MsgsPerSec, res.AvgEventBytes-shape.PayloadB
	res.CeilingRatio = shape.MsgsPerSec / raw.MsgsPerSec
	res.ShareOfCeiling = res.TurnsPerSec / shape.MsgsPerSec
	return res, nil
}

// freshServer refuses a server that already holds rein turns: the run's
// counts and latencies would mix with them.
func freshServer(ctx context.Context, rt *proc) error {
	st, err := rt.js.Stream(ctx, streams.StreamTurns)
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
func waitPulling(ctx context.Context, rt *proc, done chan error, fused bool) error {
	deadline := time.Now().Add(30 * time.Second)
	type durable struct{ stream, durable string }
	pulling := []durable{{streams.StreamTurns, streams.DurableDetector}, {streams.StreamTasks, streams.DurableAgentWorker}}
	if !fused {
		pulling = append(pulling, durable{streams.StreamDetections, streams.DurableInjector})
	}
	for _, c := range pulling {
		for {
			if cons, err := rt.js.Consumer(ctx, c.stream, c.durable); err == nil {
				if info, err := cons.Info(ctx); err == nil && info.NumWaiting > 0 {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("bench: consumer %s is not pulling after 30s", c.durable)
			}
			select {
			case err := <-done:
				done <- err // runBench still waits for it
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
// reply, seen on a plain subscription to the agent-turn subjects.
func driveBench(ctx context.Context, rt *proc, plan benchPlan, progress interface{ Write([]byte) (int, error) }) (benchResult, error) {
	convs, turns, rate := plan.convs, plan.turns, plan.rate
	total := convs * turns
	res := benchResult{Mode: "max", Conversations: convs, Turns: total, OfferedPerSec: rate, Active: plan.active}
	if rate > 0 {
		res.Mode = fmt.Sprintf("offered %.0f turns/s", rate)
	}
	wave := plan.active
	if wave == 0 || wave > convs {
		wave = convs
	}
	var mu sync.Mutex
	sent := map[string]time.Time{} // turns in flight only: the bench's own memory stays small
	inFlightMax := 0
	lat := make([]time.Duration, 0, total)
	var replies atomic.Int64
	var last atomic.Int64
	allIn := make(chan struct{})
	base := time.Now()
	var notAnswered atomic.Int64
	done := func(m *nats.Msg) {
		// Every outcome of a turn ends it: a reply, or (with injected
		// faults) an escalation or an unanswered record.
		turn, _ := strconv.Atoi(m.Header.Get("ce-turn"))
		id := schemas.EventID("turn", benchTenant, m.Header.Get("ce-conversation"), turn) + "-agent"
		now := time.Now()
		mu.Lock()
		if t, ok := sent[id]; ok {
			if !strings.HasSuffix(m.Subject, ".agent") {
				notAnswered.Add(1)
			}
			lat = append(lat, now.Sub(t))
			delete(sent, id)
			mu.Unlock()
			last.Store(int64(now.Sub(base)))
			if replies.Add(1) == int64(total) {
				close(allIn)
			}
			return
		}
		mu.Unlock()
	}
	for _, subj := range []string{streams.TurnSubject(benchTenant, "*", schemas.RoleAgent), streams.EscalationSubject(benchTenant, "*"), streams.UnansweredSubject(benchTenant, "*")} {
		sub, err := rt.nc.Subscribe(subj, done)
		if err != nil {
			return res, err
		}
		defer sub.Unsubscribe()
		_ = sub.SetPendingLimits(-1, -1)
	}

	cpu0 := bench.CPUTime()
	start := time.Since(base)
	texts := []string{"Can you show me reservation Q7RM2K?", "What is the status of my booking?", "Thanks, and the baggage allowance?"}
	batch := make([]streams.Out, 0, 256)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := rt.pub.PublishAll(ctx, batch...)
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
				conv := benchConv(c)
				meta := schemas.Meta{Tenant: benchTenant, Conversation: conv, Turn: turn}
				// The driver stands for the platform: the detector's consumer
				// enforces the schema; checking here too would bill the
				// platform's work to rein.
				ev, err := schemas.BuildEvent(schemas.TypeTurn, schemas.EventID("turn", benchTenant, conv, turn)+"-user", "/rein/bench", meta,
					schemas.Turn{Role: schemas.RoleUser, Text: texts[(c+turn)%len(texts)], Turn: turn})
				if err != nil {
					return res, err
				}
				if rate > 0 {
					if wait := due(i) - time.Since(pubStart); wait > 0 {
						if err := flush(); err != nil {
							return res, err
						}
						if wait = due(i) - time.Since(pubStart); wait > 0 {
							time.Sleep(wait)
						}
					}
				}
				i++
				mu.Lock()
				sent[schemas.EventID("turn", benchTenant, conv, turn)+"-agent"] = time.Now()
				inFlightMax = max(inFlightMax, len(sent))
				mu.Unlock()
				batch = append(batch, streams.Out{Stream: streams.StreamTurns, Subject: streams.TurnSubject(benchTenant, conv, schemas.RoleUser), Event: &ev})
				if len(batch) == cap(batch) {
					if err := flush(); err != nil {
						return res, err
					}
				}
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	timeout := time.Duration(total/20+60) * time.Second
	for done := false; !done; {
		select {
		case <-allIn:
			done = true
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(10 * time.Second):
			fmt.Fprintf(progress, "  %d of %d replies…\n", replies.Load(), total)
			if time.Since(base) > timeout {
				return res, fmt.Errorf("bench: only %d of %d turns answered within %s", replies.Load(), total, timeout)
			}
		}
	}
	elapsed := time.Duration(last.Load()) - start
	res.TurnsPerSec = float64(total) / elapsed.Seconds()
	res.CPUSecPer1000 = (bench.CPUTime() - cpu0).Seconds() / float64(total) * 1000
	mu.Lock()
	res.P50Ms, res.P99Ms = eval.Ms(eval.Percentile(lat, 50)), eval.Ms(eval.Percentile(lat, 99))
	res.NotAnswered = int(notAnswered.Load())
	if plan.modelLatency > 0 {
		model := time.Duration(benchModelCalls) * plan.modelLatency
		res.ModelLatencyMs = eval.Ms(plan.modelLatency)
		res.InFlightMax = inFlightMax
		res.AddedP50Ms, res.AddedP99Ms = res.P50Ms-eval.Ms(model), res.P99Ms-eval.Ms(model)
		res.LittleCeiling = float64(inFlightMax) / model.Seconds()
	}
	mu.Unlock()
	return res, nil
}

// avgEventBytes is the mean stored size of rein's events in this run.
func avgEventBytes(ctx context.Context, rt *proc) int {
	var msgs, bytes uint64
	for _, name := range []string{streams.StreamTurns, streams.StreamDetections, streams.StreamTasks, streams.StreamSteps} {
		s, err := rt.js.Stream(ctx, name)
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
func eventHeaders(ctx context.Context, rt *proc, persist string) (bench.Headers, error) {
	h := bench.Headers{Plain: 2}
	if persist == "turn" {
		h.Plain = 1
	}
	s, err := rt.js.Stream(ctx, streams.StreamTurns)
	if err != nil {
		return h, fmt.Errorf("bench: %w", err)
	}
	m, err := s.GetLastMsgForSubject(ctx, streams.TurnSubject(benchTenant, benchConv(0), schemas.RoleUser))
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

// extraStores is what a turn stores beyond the three hops' outputs and the
// agent turn: its steps (counted in REIN_STEPS) and its state records (one
// per tool result with --agent-persist step, the bench agent making one
// tool call per turn, plus one at the end of the turn).
func extraStores(ctx context.Context, rt *proc, turns int, persist string) int {
	writes := 2
	if persist == "turn" {
		writes = 1
	}
	s, err := rt.js.Stream(ctx, streams.StreamSteps)
	if err != nil || turns == 0 {
		return writes
	}
	info, err := s.Info(ctx)
	if err != nil {
		return writes
	}
	return int((info.State.Msgs+uint64(turns)/2)/uint64(turns)) + writes
}

// benchConv names the bench's conversation c.
func benchConv(c int) string { return fmt.Sprintf("b%05d", c) }

// benchWorkers is the per-stage in-flight limit of the benchmark
// (REIN_BENCH_WORKERS; default 0, serve's default).
func benchWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("REIN_BENCH_WORKERS")); err == nil && n > 0 {
		return n
	}
	return 0
}
