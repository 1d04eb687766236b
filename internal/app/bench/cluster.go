package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/app/pipeline"
	"github.com/reinception/rein/internal/localcluster"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// ClusterPlan is `rein bench --cluster`: the same load as Plan, played
// once per entry of Replicas on a fresh Nodes-node JetStream cluster in
// this process, with that many replicas of every stage.
type ClusterPlan struct {
	Plan
	// Nodes is the cluster's size; its streams and bucket get
	// min(Nodes, 3) replicas.
	Nodes int
	// Replicas are the replicas per stage of each run, in order.
	Replicas []int
	// Partitions splits the turns, detections and tasks streams (as
	// --partitions): with 1 a stage's replicas stand by for one active one.
	Partitions int
}

// ClusterResult is what `rein bench --cluster --json` prints.
type ClusterResult struct {
	ClusterNodes   int `json:"cluster_nodes"`
	StreamReplicas int `json:"stream_replicas"`
	Partitions     int `json:"partitions"`
	// WorkersPerReplica bounds each stage's turns in flight per replica
	// (0: the stages' default).
	WorkersPerReplica int          `json:"workers_per_replica,omitempty"`
	Conversations     int          `json:"conversations"`
	ModelLatencyMs    float64      `json:"model_latency_ms"`
	Runs              []ClusterRun `json:"runs"`
}

// ClusterRun is one run of a ClusterPlan.
type ClusterRun struct {
	ReplicasPerStage int     `json:"replicas_per_stage"`
	TurnsPerSec      float64 `json:"turns_per_s"`
	P50Ms            float64 `json:"p50_ms"`
	P99Ms            float64 `json:"p99_ms"`
	// Turns were offered; Outcomes are the agent replies, escalations and
	// unanswered records stored for them, counted in the streams after
	// the run (one per turn when nothing is lost or duplicated).
	Turns int `json:"turns"`
	// StreamReplicas is REIN_TURNS's replica count as the cluster reports
	// it after provisioning.
	StreamReplicas int     `json:"stream_replicas"`
	Outcomes       int     `json:"outcomes"`
	NotAnswered    int     `json:"not_answered"`
	CPUSecPer1000  float64 `json:"cpu_s_per_1000_turns"`
	InFlightMax    int     `json:"in_flight_max,omitempty"`
	// ActiveReplicas is, per stage, how many of its replicas handled any
	// message: without partitions a stage's durable delivers to one pinned
	// replica at a time, the others stand by; with them each replica
	// works its share of the partitions.
	ActiveReplicas map[string]int `json:"active_replicas"`
}

// RunCluster plays plan once per replica count; progress notes go to
// progress.
func RunCluster(ctx context.Context, plan ClusterPlan, progress io.Writer) (ClusterResult, error) {
	if plan.Nodes < 1 || len(plan.Replicas) == 0 {
		return ClusterResult{}, fmt.Errorf("bench: a cluster needs at least one node and one replica count")
	}
	res := ClusterResult{ClusterNodes: plan.Nodes, StreamReplicas: min(plan.Nodes, 3), Conversations: plan.Conversations,
		ModelLatencyMs: eval.Ms(plan.ModelLatency), Partitions: max(plan.Partitions, 1), WorkersPerReplica: plan.Workers}
	for _, n := range plan.Replicas {
		if n < 1 {
			return res, fmt.Errorf("bench: %d replicas per stage", n)
		}
		fmt.Fprintf(progress, "cluster of %d nodes, R%d streams, %d partition(s), %d replica(s) of every stage: %d turns…\n", plan.Nodes, res.StreamReplicas, res.Partitions, n, plan.Conversations*plan.Turns)
		run, err := runOnCluster(ctx, plan, res.StreamReplicas, n, progress)
		if err != nil {
			return res, fmt.Errorf("bench: %d replicas per stage: %w", n, err)
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// runOnCluster starts a fresh cluster, replicas processes each running
// every stage on it, and plays the load.
func runOnCluster(ctx context.Context, plan ClusterPlan, streamReplicas, replicas int, progress io.Writer) (ClusterRun, error) {
	dir, err := os.MkdirTemp("", "rein-bench-cluster-")
	if err != nil {
		return ClusterRun{}, err
	}
	defer os.RemoveAll(dir)
	cluster, err := localcluster.Start(dir, plan.Nodes)
	if err != nil {
		return ClusterRun{}, err
	}
	defer cluster.Shutdown()
	if err := cluster.WaitMetaReady(60 * time.Second); err != nil {
		return ClusterRun{}, err
	}
	agent, err := agentModel(plan.Plan)
	if err != nil {
		return ClusterRun{}, err
	}
	log, err := telemetry.NewLoggerFormat(os.Stderr, "error", "")
	if err != nil {
		return ClusterRun{}, err
	}
	prov := natsserver.DefaultProvision()
	prov.Defaults.Replicas = streamReplicas
	prov.Partitions = plan.Partitions
	if plan.Duplicates > 0 {
		prov.Defaults.Duplicate = plan.Duplicates
	}
	// Every replica signs and checks tasks with one shared key, as the
	// processes of a deployment do.
	key := filepath.Join(dir, "task-key")
	if _, err := natsserver.EnsureSecretFile(key, 32); err != nil {
		return ClusterRun{}, err
	}
	procs := make([]*pipeline.Process, 0, replicas)
	defer func() {
		for _, p := range procs {
			p.Close()
		}
	}()
	for i := range replicas {
		p, err := pipeline.Start(ctx, pipeline.Config{Name: fmt.Sprintf("rein-bench-%d", i+1), Logger: log,
			Connect: natsserver.ConnectConfig{URL: cluster.URLs()}, MaxEventBytes: streams.DefaultMaxEventBytes,
			MemoryLimit: plan.MemoryLimit, HeapGoal: plan.HeapGoal, Provision: prov, TaskKeyFile: key})
		if err != nil {
			return ClusterRun{}, err
		}
		procs = append(procs, p)
	}
	names, _ := pipeline.ResolveStages([]string{"all"})
	so, err := stages(plan.Plan, agent)
	if err != nil {
		return ClusterRun{}, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, replicas)
	for _, p := range procs {
		go func() { done <- p.Run(sctx, so, names) }()
	}
	stopped := func() error {
		cancel()
		var errs []error
		for range procs {
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	// The driver stands for the platform: a connection of its own.
	nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: cluster.URLs(), Name: "rein-bench-driver"})
	if err != nil {
		return ClusterRun{}, errors.Join(err, stopped())
	}
	defer nc.Close()
	js, err := natsserver.NewJetStream(nc)
	if err != nil {
		return ClusterRun{}, errors.Join(err, stopped())
	}
	if err := waitPulling(ctx, js, done, plan.Partitions); err != nil {
		return ClusterRun{}, errors.Join(err, stopped())
	}
	if err := waitShared(ctx, procs, plan.Partitions); err != nil {
		return ClusterRun{}, errors.Join(err, stopped())
	}
	turns, err := js.Stream(ctx, bus.StreamTurns)
	if err != nil {
		return ClusterRun{}, errors.Join(err, stopped())
	}
	res, _, err := driveBench(ctx, nc, streams.NewPublisher(js, nil, streams.PublisherConfig{}), plan.Plan, progress)
	if err != nil {
		return ClusterRun{}, errors.Join(err, stopped())
	}
	run := ClusterRun{ReplicasPerStage: replicas, TurnsPerSec: res.TurnsPerSec, P50Ms: res.P50Ms, P99Ms: res.P99Ms, Turns: res.Turns,
		NotAnswered: res.NotAnswered, CPUSecPer1000: res.CPUSecPer1000, InFlightMax: res.InFlightMax, ActiveReplicas: activeReplicas(procs),
		StreamReplicas: turns.CachedInfo().Config.Replicas}
	if err := stopped(); err != nil {
		return run, err
	}
	run.Outcomes, err = storedOutcomes(ctx, js)
	return run, err
}

// waitShared waits, with partitions, until every process works its share
// of every pulling stage's partitions (rein_stage_partitions), so that the
// load does not start while the first process holds them all.
func waitShared(ctx context.Context, procs []*pipeline.Process, partitions int) error {
	if partitions <= 1 {
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		total, least := map[string]float64{}, map[string]float64{}
		for i, p := range procs {
			for stage, n := range gaugeByStage(p, telemetry.MStagePartitions) {
				if stage == bus.StageEscalation {
					continue // its stream has no partitions
				}
				total[stage] += n
				if i == 0 || n < least[stage] {
					least[stage] = n
				}
			}
		}
		settled := len(total) > 0
		for stage, n := range total {
			settled = settled && n == float64(partitions) && (least[stage] > 0 || len(procs) > partitions)
		}
		if settled {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the replicas did not share the partitions within 60s (%v)", total)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// gaugeByStage reads a gauge of one process by its stage label.
func gaugeByStage(p *pipeline.Process, name string) map[string]float64 {
	return sumByStage(p, name, func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
}

// sumByStage sums one metric of a process's series by their stage label.
func sumByStage(p *pipeline.Process, name string, value func(*dto.Metric) float64) map[string]float64 {
	out := map[string]float64{}
	mfs, err := p.Reg.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" {
					out[l.GetValue()] += value(m)
				}
			}
		}
	}
	return out
}

// activeReplicas counts, per stage, the processes whose consume loop
// decided any message of it.
func activeReplicas(procs []*pipeline.Process) map[string]int {
	active := map[string]int{}
	for _, p := range procs {
		for stage, n := range sumByStage(p, telemetry.MStageMessages, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }) {
			if n > 0 {
				active[stage]++
			}
		}
	}
	return active
}

// storedOutcomes counts the bench tenant's stored outcomes: agent replies
// in REIN_TURNS, escalations and unanswered records in REIN_OUTCOMES.
func storedOutcomes(ctx context.Context, js jetstream.JetStream) (int, error) {
	n := 0
	for stream, subjects := range map[string][]string{
		bus.StreamTurns:    bus.AnyPartition(bus.TurnSubject(tenant, "*", schemas.RoleAgent)),
		bus.StreamOutcomes: {bus.EscalationSubject(tenant, "*"), bus.UnansweredSubject(tenant, "*")},
	} {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return 0, err
		}
		for _, subj := range subjects {
			info, err := s.Info(ctx, jetstream.WithSubjectFilter(subj))
			if err != nil {
				return 0, err
			}
			for _, c := range info.State.Subjects {
				n += int(c)
			}
		}
	}
	return n, nil
}
