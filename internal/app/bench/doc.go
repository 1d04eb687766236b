// Package bench is the driver of `rein bench` and its physical reference.
//
// Run starts a pipeline of its own (pipeline.Start on an embedded server, or
// Plan.NATSURL), the rules inception module and the scripted agent
// (agent.yaml, optionally with model latency and faults), offers
// Plan.Conversations × Plan.Turns user turns and measures turns/s,
// end-to-end latency (user turn published → its outcome stored), CPU and
// peak RSS into a Result, and splits each turn's latency into its legs
// (hops.go: publish → turn stored → task stored → reply stored → seen,
// from the streams' stored timestamps read after the run). In the same run it measures the raw JetStream
// chain (RunRawChain, RunRawShape) that moves the same messages through
// consume → publish → ack hops with no rein code, and the resource sampling
// (CPUTime, PeakRSSMB) the results report. A CPU profile taken from the
// first turn offered to the last outcome stored is read back (AttributeCPU)
// into CPU seconds per 1,000 turns by category (Plan.Trace writes the
// execution trace of the same window); Plan.Starved pins
// GOMAXPROCS to 1 for the whole run. RunCluster plays the same load
// on a JetStream cluster started in this process (internal/localcluster)
// once per count of stage replicas, each replica a pipeline.Process.
//
// Consumes: the agent's turns, escalations and unanswered records of its
// tenant (rein.turns.bench.*.agent, rein.escalations.bench.*,
// rein.unanswered.bench.*) on a plain subscription, after the run the
// headers of REIN_TURNS and REIN_TASKS on the bench tenant's subjects
// (ordered consumers), and its own benchmark streams (BENCH_*). Produces: the user turns (rein.turns.bench.<conv>.user)
// and the BENCH_* messages. Exports no metrics of its own; the pipeline's
// are on its runtime's registry.
package bench
