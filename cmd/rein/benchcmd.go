package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/app/bench"
	"github.com/reinception/rein/internal/app/pipeline"
	"github.com/reinception/rein/streams"
)

func init() { register(newBenchCmd) }

func newBenchCmd() *cobra.Command {
	var plan bench.Plan
	var quick, asJSON bool
	var clusterNodes, partitions int
	var replicas []int
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark the whole pipeline against a raw JetStream chain measured in the same run",
		Long: `bench is a benchmark, not a test. It starts an embedded server with file storage and every stage
(the rules inception module, the scripted agent with zero latency and one tool call per turn), plays
--conversations × --turns user turns, and reports turns/s, end-to-end latency (user turn published →
agent reply stored) p50/p99, CPU seconds per 1,000 turns and the pipeline's peak RSS (read before the
reference chains run in the same process). It splits each turn's latency into its legs (publish →
user turn stored → task stored → agent reply stored → reply seen by the bench), from the streams'
stored timestamps read after the run, and reports each leg's p50, p99 and mean over the slowest 1 %
of turns (the leg holding the tail). In the same run it measures a
raw JetStream chain of three hops (consume, publish, ack) with rein's average event size, on a fresh
server of its own, and reports the ratio of the two throughputs; then a raw chain shaped like rein:
its two hops (the detector stores each detection with its task), rein's message count per turn (the first hop also stores the detection, the
last the turn's steps and state records) and rein's headers (a stored event's CloudEvents
attributes and Nats-Msg-Id, which the server deduplicates), in messages of the same size, with no
application work: the ceiling of rein's design on this machine.

Without --rate, turns are offered at maximum rate (latency then measures the backlog); with --rate N
they are offered open-loop at N turns/s, and it also reports the replies per second seen while the
load was still offered (after the first turns' model time and a second of ramp): turns/s counts the
ramp and the last turns' tail, so at a steady rate only this figure says whether rein kept up.
--quick finishes within a minute.

It reports where the pipeline's CPU went: a CPU profile taken from the first turn offered to the
last outcome stored, each sample given to the first category with a frame in its stack (gc,
scheduler, nats-server, signing, schema-validation, kv-state, rules-inception, json-cloudevents,
jetstream-client, alloc, other), each category's share of the CPU seconds per 1,000 turns.
It reports the heap bytes allocated per turn and the collections per 1,000 turns over the same
window (runtime/metrics): the whole process's, the embedded server and the bench driver included.
It also reports, per turn, the protocol messages each of the pipeline's connections sent to the
embedded server and received from it while the load ran (publishes, acks, requests; deliveries,
publish acks, replies), from the server's per-connection counters.
--starved pins GOMAXPROCS to 1 for the whole run, the reference chains included.

With --cluster N it starts a real N-node JetStream cluster in this process instead (loopback, a store
directory per node, routes between them) with R3 streams, and plays the load once per --replicas
count, each time on a fresh cluster with that many processes running every stage; the scripted agent
takes --model-latency per call (default 50ms there). The streams are split into --partitions partitions
(default: the largest --replicas count), so the replicas of a stage share the conversations; with
--partitions 1 one replica of each stage works and the others stand by. --workers bounds each stage's
turns in flight per replica, as a replica's share of a model's concurrency would: with it the load is
bound by the model's latency rather than by this machine's cores, and throughput follows the
replicas. It reports turns/s and p50/p99 per replica count, the outcomes stored per turn, and how many
replicas of each stage handled anything. No raw reference chains run. --quick finishes within four
minutes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if clusterNodes > 0 {
				return benchCluster(cmd, bench.ClusterPlan{Plan: plan, Nodes: clusterNodes, Replicas: replicas, Partitions: partitions}, quick, asJSON)
			}
			if quick {
				if !cmd.Flags().Changed("conversations") {
					plan.Conversations = 2000
				}
				if !cmd.Flags().Changed("turns") {
					plan.Turns = 5
				}
				if !cmd.Flags().Changed("raw-msgs") {
					plan.RawMsgs = 15000
				}
			}
			if err := plan.Validate(); err != nil {
				return err
			}
			res, err := bench.Run(cmd.Context(), plan, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeJSON(out, res)
			}
			fmt.Fprintf(out, "rein pipeline: %d turns (%d conversations), %s\n", res.Turns, res.Conversations, res.Mode)
			fmt.Fprintf(out, "  %.0f turns/s · p50 %.1f ms · p99 %.1f ms · %.2f CPU s per 1,000 turns · peak RSS %.0f MB\n",
				res.TurnsPerSec, res.P50Ms, res.P99Ms, res.CPUSecPer1000, res.PeakRSSMB)
			fmt.Fprintf(out, "  the whole process allocated %.1f KB per turn · %.2f collections per 1,000 turns\n",
				res.AllocBytesPerTurn/1000, res.GCCyclesPer1000)
			if res.CleanP50MsNoInception > 0 {
				fmt.Fprintf(out, "  inception %.0f ms, speculation on: clean-turn p50 %.1f ms; the same load without inception: %.1f ms (%+.1f %%)\n",
					res.InceptionLatencyMs, res.CleanP50Ms, res.CleanP50MsNoInception, 100*(res.CleanP50Ms/res.CleanP50MsNoInception-1))
			}
			if res.SustainedPerSec > 0 {
				fmt.Fprintf(out, "  while the load was offered: %.0f replies/s (of %.0f turns/s offered)\n", res.SustainedPerSec, res.OfferedPerSec)
			}
			if res.ModelLatencyMs > 0 {
				fmt.Fprintf(out, "  model latency %.0f ms × %d calls per turn: %d turns in flight at most · rein adds p50 %.1f ms, p99 %.1f ms · Little's-law ceiling %.0f turns/s\n",
					res.ModelLatencyMs, bench.ModelCalls, res.InFlightMax, res.AddedP50Ms, res.AddedP99Ms, res.LittleCeiling)
			}
			if res.NotAnswered > 0 {
				fmt.Fprintf(out, "  %d turns ended without a reply (handed to a human as agent_unavailable, or failed)\n", res.NotAnswered)
			}
			if res.RunQueueWaitPerCPU > 0 {
				fmt.Fprintf(out, "  the process's threads waited %.2f s on the kernel's run queue per CPU second they ran (it grows with the machine's other load, which the latencies then measure too)\n", res.RunQueueWaitPerCPU)
			}
			if len(res.Hops) > 0 {
				parts := make([]string, 0, len(res.Hops))
				for _, h := range res.Hops {
					parts = append(parts, fmt.Sprintf("%s %.2f · %.2f · %.2f", h.Name, h.P50Ms, h.P99Ms, h.TailMeanMs))
				}
				fmt.Fprintf(out, "  where a turn's time went, ms (p50 · p99 · mean of the slowest 1 %%, over %d turns): %s\n", res.HopTurns, strings.Join(parts, "; "))
			}
			if len(res.WirePerTurn) > 0 {
				parts := make([]string, 0, len(res.WirePerTurn))
				for _, w := range res.WirePerTurn {
					parts = append(parts, fmt.Sprintf("%s %.2f · %.2f", w.Conn, w.In, w.Out))
				}
				fmt.Fprintf(out, "  protocol messages per turn to · from the server, by connection: %s\n", strings.Join(parts, "; "))
			}
			if len(res.CPUByCategory) > 0 {
				parts := make([]string, 0, len(res.CPUByCategory))
				for _, c := range res.CPUByCategory {
					parts = append(parts, fmt.Sprintf("%s %.3f", c.Category, c.CPUSecPer1000))
				}
				fmt.Fprintf(out, "  CPU s per 1,000 turns by category (%d profile samples): %s\n", res.ProfileSamples, strings.Join(parts, " · "))
			}
			if plan.Starved {
				fmt.Fprintf(out, "  starved: GOMAXPROCS %d for the whole run\n", res.GOMAXPROCS)
			}
			fmt.Fprintf(out, "raw JetStream 3-hop chain (%d B payload): %.0f msgs/s · p99 %.1f ms\n", res.AvgEventBytes, res.Raw3HopMsgsPerS, res.Raw3HopP99Ms)
			fmt.Fprintf(out, "ratio (rein turns/s ÷ raw 3-hop msgs/s): %.2f\n", res.Ratio)
			fmt.Fprintf(out, "ceiling (a raw chain of rein's %d hops storing its %d extra messages per turn, with its %d B of headers): %.0f turns/s, ratio %.2f; rein reaches %.0f %% of it\n",
				res.ShapeHops, res.ShapeExtra, res.ShapeHeaderBytes, res.RawShapePerS, res.CeilingRatio, 100*res.ShareOfCeiling)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&plan.Conversations, "conversations", 2000, "conversations")
	fs.IntVar(&plan.Turns, "turns", 10, "user turns per conversation")
	fs.IntVar(&plan.Active, "active", 0, "conversations in progress at once, played in waves (0: all at once)")
	fs.Float64Var(&plan.Rate, "rate", 0, "offered turns/s (0: maximum rate)")
	fs.IntVar(&plan.RawMsgs, "raw-msgs", 50000, "messages through the raw reference chain")
	fs.BoolVar(&quick, "quick", false, "a run that finishes within a minute (2,000 × 5 turns, 15,000 raw messages)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.IntVar(&plan.DetectorCache, "detector-cache", 0, "conversations the detector keeps in memory (0: its default, 100,000)")
	fs.IntVar(&plan.AgentCache, "agent-cache", 0, "conversations the agent worker keeps in memory (0: its default, 100,000)")
	fs.IntVar(&plan.DetectorCacheMiB, "detector-cache-mib", 0, "as serve's: MiB of surface contexts the detector keeps in memory (0: its default, 32)")
	fs.IntVar(&plan.AgentCacheMiB, "agent-cache-mib", 0, "as serve's: MiB of agent states the agent worker keeps in memory (0: its default, 128); a conversation evicted is read again from the KV bucket on its next turn")
	fs.StringVar(&plan.MemoryLimit, "memory-limit", "", "soft memory limit of the process, as serve's (e.g. 600MiB)")
	fs.StringVar(&plan.HeapGoal, "heap-goal", pipeline.DefaultHeapGoal, "as serve's: the heap the Go collector lets grow before a cycle while the live heap is small (0: GOGC alone); held for the whole run, so the reference chains run with it too")
	fs.DurationVar(&plan.Duplicates, "duplicates", 0, "the streams' duplicate window, as rein.yaml's streams.defaults.duplicates (0: the default, 2m); the server's de-duplication memory is proportional to it")
	fs.StringVar(&plan.Persist, "agent-persist", "step", "agent state writes: step (after every tool result that changed the conversation's tool state, and at the turn's end) or turn")
	fs.StringVar(&plan.StageConn, "nats-stage-conn", pipeline.StageConnInProcess, "as serve's: how the stages reach the embedded server, in-process, loopback (a port of the run's own on 127.0.0.1) or pipe; the reference chains always use their own port")
	fs.DurationVar(&plan.LiveStepsAfter, "agent-live-steps-after", agentworker.DefaultLiveStepsAfter, "as serve's: a turn running longer than this publishes its steps as it goes, each after a state write that holds it")
	fs.StringVar(&plan.StepEvents, "agent-step-events", agentworker.StepEventsStep, "as serve's: step (one event per agent step) or turn (a quick turn's steps as one dev.rein.steps.v1)")
	fs.BoolVar(&plan.Verbose, "verbose", false, "print each stage's mean handling time (delivery to ack, queueing included) on stderr")
	fs.StringVar(&plan.CPUProfile, "cpuprofile", "", "write the CPU profile of the pipeline's run (first turn offered to last outcome stored) to this file (go tool pprof)")
	fs.StringVar(&plan.Trace, "trace", "", "write the runtime's execution trace of the pipeline's run (first turn offered to last outcome stored) to this file (go tool trace)")
	fs.BoolVar(&plan.Breakdown, "breakdown", true, "report CPU s per 1,000 turns by category, from a CPU profile taken during the pipeline's run (--breakdown=false: no profile)")
	fs.BoolVar(&plan.Starved, "starved", false, "pin GOMAXPROCS to 1 for the whole run, the reference chains included: behaviour on a busy machine")
	fs.StringVar(&plan.NATSNkey, "nats-nkey", "", "nkey seed file of the --nats-url server's user (for a rein serve, DATA-DIR/nats-keys/admin.nk)")
	fs.StringVar(&plan.NATSURL, "nats-url", "", "run the pipeline against this NATS server instead of an embedded one, so that peak RSS is rein's own; it must hold no rein turns yet (use a fresh server: the run leaves its streams there); the reference chains stay embedded")
	fs.DurationVar(&plan.InceptionLatency, "inception-latency", 0, "each turn's inception takes this long (a simulator of the inception model's time around the rules module)")
	fs.BoolVar(&plan.Speculate, "speculate", false, "speculative inception in the agent worker; with --inception-latency the same load also runs without inception latency and without speculation, reporting both clean-turn p50s")
	fs.DurationVar(&plan.Faults.Jitter, "model-jitter", 0, "each model call takes up to this much longer (uniform)")
	fs.Float64Var(&plan.Faults.ErrorRate, "model-error-rate", 0, "share of model calls that fail with HTTP 503 (retried, then the breaker)")
	fs.Float64Var(&plan.Faults.RateLimitRate, "model-429-rate", 0, "share of model calls answered 429 with Retry-After 1s (the adaptive limit backs off)")
	fs.DurationVar(&plan.ModelLatency, "model-latency", 0, "each scripted agent model call takes this long (two calls per turn): the scenario of a real model's time, reporting in-flight turns, rein's added latency and Little's-law ceiling (0: the CPU scenario)")
	fs.IntVar(&clusterNodes, "cluster", 0, "run on a real JetStream cluster of this many nodes started in this process, with R3 streams, once per --replicas count (0: the single-server bench)")
	fs.IntSliceVar(&replicas, "replicas", []int{1, 2, 4}, "with --cluster: replicas of every stage, one run each")
	fs.IntVar(&partitions, "partitions", 0, "with --cluster: partitions of the turns, detections and tasks streams (0: the largest --replicas count; 1: one active replica per stage)")
	fs.IntVar(&plan.Workers, "workers", 0, "turns in flight per stage in each process (0: the stages' default, 4096): a replica's share of a model's concurrency")
	fs.StringVar(&plan.MemProfile, "memprofile", "", "write a heap profile of the pipeline, taken when the last reply is stored, to this file (go tool pprof -sample_index=inuse_space for what is live then, alloc_space for what the run allocated)")
	return cmd
}

// benchCluster runs `rein bench --cluster`: its own defaults (a smaller
// load, the model's latency) unless flags say otherwise, then one run per
// replica count.
func benchCluster(cmd *cobra.Command, plan bench.ClusterPlan, quick, asJSON bool) error {
	fs := cmd.Flags()
	if !fs.Changed("conversations") {
		plan.Conversations = 2000
		if quick {
			plan.Conversations = 1000
		}
	}
	if !fs.Changed("turns") {
		plan.Turns = 5
		if quick {
			plan.Turns = 2
		}
	}
	if !fs.Changed("model-latency") {
		plan.ModelLatency = 50 * time.Millisecond
	}
	if len(plan.Replicas) == 0 {
		return fmt.Errorf("bench: --replicas needs at least one count")
	}
	if plan.Partitions == 0 {
		plan.Partitions = slices.Max(plan.Replicas)
	}
	if plan.Partitions < 1 || plan.Partitions > streams.MaxPartitions {
		return fmt.Errorf("bench: --partitions %d must be 1..%d", plan.Partitions, streams.MaxPartitions)
	}
	if err := plan.Validate(); err != nil {
		return err
	}
	if plan.NATSURL != "" {
		return fmt.Errorf("bench: --cluster starts its own cluster; it does not take --nats-url")
	}
	res, err := bench.RunCluster(cmd.Context(), plan, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return writeJSON(out, res)
	}
	fmt.Fprintf(out, "rein on a %d-node JetStream cluster, R%d streams, %d partition(s): %d conversations, scripted agent %.0f ms × %d calls per turn",
		res.ClusterNodes, res.StreamReplicas, res.Partitions, res.Conversations, res.ModelLatencyMs, bench.ModelCalls)
	if res.WorkersPerReplica > 0 {
		fmt.Fprintf(out, ", %d turns in flight per stage per replica", res.WorkersPerReplica)
	}
	fmt.Fprintln(out)
	for _, r := range res.Runs {
		fmt.Fprintf(out, "  %d replica(s) per stage: %.0f turns/s · p50 %.1f ms · p99 %.1f ms · %d of %d turns with an outcome · active replicas %v\n",
			r.ReplicasPerStage, r.TurnsPerSec, r.P50Ms, r.P99Ms, r.Outcomes, r.Turns, r.ActiveReplicas)
	}
	return nil
}

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
