package bench

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// One hundred turns answered in 1..100 ms over two seconds, with half a
// CPU second spent and each of the agent's two model calls taking 10 ms.
func TestSummarizeOnFixedLatencies(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(i+1) * time.Millisecond
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(lat), func(i, j int) { lat[i], lat[j] = lat[j], lat[i] })

	r := Result{Turns: 100}
	r.summarize(slices.Clone(lat), 2*time.Second, 500*time.Millisecond, 10*time.Millisecond, 8)
	if !near(r.TurnsPerSec, 50) || !near(r.CPUSecPer1000, 5) || !near(r.P50Ms, 50) || !near(r.P99Ms, 99) {
		t.Errorf("turns/s %v (want 50), CPU s per 1,000 %v (5), p50 %v (50), p99 %v (99)", r.TurnsPerSec, r.CPUSecPer1000, r.P50Ms, r.P99Ms)
	}
	// rein adds the end-to-end latency less the model's 2 × 10 ms; with 8
	// turns in flight, Little's law allows 8 / 20 ms.
	if !near(r.ModelLatencyMs, 10) || r.InFlightMax != 8 || !near(r.AddedP50Ms, 30) || !near(r.AddedP99Ms, 79) || !near(r.LittleCeiling, 400) {
		t.Errorf("model %v ms, in flight %d, added p50 %v p99 %v, Little %v", r.ModelLatencyMs, r.InFlightMax, r.AddedP50Ms, r.AddedP99Ms, r.LittleCeiling)
	}

	cpuOnly := Result{Turns: 100}
	cpuOnly.summarize(lat, 2*time.Second, 0, 0, 8)
	if cpuOnly.ModelLatencyMs != 0 || cpuOnly.InFlightMax != 0 || cpuOnly.LittleCeiling != 0 {
		t.Errorf("without a model latency the model figures stay empty: %+v", cpuOnly)
	}
}

func TestCompareWithTheRawChains(t *testing.T) {
	r := Result{TurnsPerSec: 2000, AvgEventBytes: 600}
	r.compare(RawChainResult{MsgsPerSec: 10000, P99Ms: 3}, RawChainResult{MsgsPerSec: 4000, PayloadB: 450})
	if !near(r.Ratio, 0.2) || !near(r.CeilingRatio, 0.4) || !near(r.ShareOfCeiling, 0.5) ||
		r.ShapeHeaderBytes != 150 || r.Raw3HopMsgsPerS != 10000 || r.Raw3HopP99Ms != 3 || r.RawShapePerS != 4000 {
		t.Errorf("compared: %+v", r)
	}
}

// The keys of `rein bench --json` are what docs/performance.md and
// scripts read; the scenario-only ones appear only in their scenario.
func TestResultJSONKeys(t *testing.T) {
	keys := func(r Result) []string {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	always := []string{"alloc_bytes_per_turn", "avg_event_bytes", "ceiling_ratio", "conversations", "cpu_s_per_1000_turns", "duplicates_window_s", "gc_cycles_per_1000_turns", "gomaxprocs", "mode",
		"p50_ms", "p99_ms", "peak_rss_mb", "ratio", "raw_3hop_msgs_per_s", "raw_3hop_p99_ms", "raw_shape_turns_per_s",
		"shape_extra_msgs", "shape_header_bytes", "shape_hops", "share_of_ceiling", "turns", "turns_per_s"}
	if got := keys(Result{}); !slices.Equal(got, always) {
		t.Errorf("keys of a CPU run:\n got %v\nwant %v", got, always)
	}
	model := Result{ModelLatencyMs: 50, InFlightMax: 3, AddedP50Ms: 1, AddedP99Ms: 2, LittleCeiling: 30}
	want := append(slices.Clone(always), "added_p50_ms", "added_p99_ms", "in_flight_max", "little_ceiling_turns_per_s", "model_latency_ms")
	slices.Sort(want)
	if got := keys(model); !slices.Equal(got, want) {
		t.Errorf("keys of a model-latency run:\n got %v\nwant %v", got, want)
	}
	rated := Result{OfferedPerSec: 1000, SustainedPerSec: 990}
	want = append(slices.Clone(always), "offered_per_s", "sustained_turns_per_s")
	slices.Sort(want)
	if got := keys(rated); !slices.Equal(got, want) {
		t.Errorf("keys of a run at a steady rate:\n got %v\nwant %v", got, want)
	}
	hops := Result{Hops: []Hop{{Name: HopIngest}}, HopTurns: 1, RunQueueWaitPerCPU: 0.1}
	want = append(slices.Clone(always), "hop_turns", "hops", "run_queue_wait_per_cpu_s")
	slices.Sort(want)
	if got := keys(hops); !slices.Equal(got, want) {
		t.Errorf("keys of a run with its hops and run-queue wait:\n got %v\nwant %v", got, want)
	}
	profiled := Result{CPUByCategory: []CPUShare{{Category: CatServer, Share: 1}}, ProfileSamples: 10}
	want = append(slices.Clone(always), "cpu_by_category", "profile_samples")
	slices.Sort(want)
	if got := keys(profiled); !slices.Equal(got, want) {
		t.Errorf("keys of a profiled run:\n got %v\nwant %v", got, want)
	}
}

func TestPlanValidate(t *testing.T) {
	ok := Plan{Conversations: 1, Turns: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Plan{{Turns: 1}, {Conversations: 1}, {Conversations: 1, Turns: 1, Active: -1},
		{Conversations: 1, Turns: 1, Rate: -1}, {Conversations: 1, Turns: 1, Duplicates: -1}, {Conversations: 1, Turns: 1, Workers: -1}} {
		if p.Validate() == nil {
			t.Errorf("plan %+v accepted", p)
		}
	}
}

// The bench's knobs reach each stage's Config; the simulated inception
// latency wraps the rules module and stays in the bench.
func TestBenchStages(t *testing.T) {
	t.Setenv("REIN_BENCH_WORKERS", "")
	agent := llm.NewScripted(&llm.Script{})
	plan := Plan{Workers: 64, DetectorCache: 5, AgentCache: 6, DetectorCacheMiB: 7, AgentCacheMiB: 8, Persist: agentworker.PersistTurn, LiveStepsAfter: time.Hour, StepEvents: agentworker.StepEventsTurn, Speculate: true, InceptionLatency: 40 * time.Millisecond}
	s, err := stages(plan, agent)
	if err != nil {
		t.Fatal(err)
	}
	d, a := s.Detector, s.AgentWorker
	if d.Workers != 64 || a.Workers != 64 || d.MaxConversations != 5 || a.MaxConversations != 6 ||
		d.MaxCacheBytes != 7<<20 || a.MaxCacheBytes != 8<<20 || a.Persist != agentworker.PersistTurn ||
		a.LiveStepsAfter != time.Hour || a.StepEvents != agentworker.StepEventsTurn || !a.Speculate || d.TaxonomyVersion != inception.DefaultTaxonomy().Version || s.Given.AgentModel != agent {
		t.Errorf("stages %+v", s)
	}
	if m, ok := s.Given.Module.(delayedModule); !ok || m.d != 40*time.Millisecond || m.Name() != inception.ModuleRules {
		t.Errorf("module %T %+v, want the rules module delayed 40ms", s.Given.Module, s.Given.Module)
	}
	plan.InceptionLatency = 0
	if s, _ = stages(plan, agent); s.Given.Module.Name() != inception.ModuleRules {
		t.Errorf("module %T", s.Given.Module)
	} else if _, delayed := s.Given.Module.(delayedModule); delayed {
		t.Error("the module is delayed without an inception latency")
	}

	t.Setenv("REIN_BENCH_WORKERS", "9")
	if s, _ = stages(Plan{}, agent); s.Detector.Workers != 9 || s.AgentWorker.Workers != 9 {
		t.Errorf("REIN_BENCH_WORKERS=9: detector %d, agent %d", s.Detector.Workers, s.AgentWorker.Workers)
	}
}

// fixedModule decides Rein for every turn.
type fixedModule struct{}

func (fixedModule) Name() string { return "fixed" }
func (fixedModule) Detect(context.Context, inception.Input) (inception.Decision, error) {
	return inception.Decision{Rein: true}, nil
}

func TestDelayedModuleTakesItsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := delayedModule{Module: fixedModule{}, d: 300 * time.Millisecond}
		start := time.Now()
		dec, err := m.Detect(t.Context(), inception.Input{})
		if err != nil || !dec.Rein || time.Since(start) != 300*time.Millisecond {
			t.Errorf("Detect = %+v, %v after %s; want the module's decision after 300ms", dec, err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if _, err := m.Detect(ctx, inception.Input{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Detect past its deadline = %v", err)
		}
		if !m.NeedsContext(inception.Input{}) {
			t.Error("a module that cannot tell needs the context")
		}
	})
}
