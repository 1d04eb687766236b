package main

import (
	"context"
	"encoding/json"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/app/bench"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// TestBenchSmallRun plays a small bench in waves, starved of cores, and
// checks that every turn was answered, every figure the JSON promises is
// there, the CPU breakdown names every category and adds up to the CPU
// per 1,000 turns, and GOMAXPROCS is 1 for the run and given back after.
func TestBenchSmallRun(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	out, err := runCLI(t, context.Background(), "bench", "--conversations", "30", "--turns", "2", "--active", "10",
		"--raw-msgs", "300", "--starved", "--json")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	if r.Turns != 60 || r.Conversations != 30 || r.Active != 10 || r.TurnsPerSec <= 0 || r.P99Ms < r.P50Ms {
		t.Errorf("result %+v", r)
	}
	// Every turn is answered by a reply, so every turn has its four legs.
	if r.HopTurns != 60 || len(r.Hops) != 4 || r.Hops[0].Name != bench.HopIngest || r.Hops[3].Name != bench.HopNotify {
		t.Errorf("%d turns with legs, legs %+v; want 60 turns, the four legs in order", r.HopTurns, r.Hops)
	}
	// One read-only tool call per turn: tool call, tool result and reply
	// steps, and one state record (a result that changed nothing is not
	// written on its own), counted in the streams.
	if r.ShapeExtra != 4 {
		t.Errorf("extra stores per turn = %d, want 4", r.ShapeExtra)
	}
	// The injector is fused into the detector: two hops per turn.
	if r.ShapeHops != 2 {
		t.Errorf("%d hops; want 2 (the detector stores each detection with its task)", r.ShapeHops)
	}
	// The ceiling chain carries a stored event's headers inside the same
	// message size.
	if r.ShapeHeaderBytes < 200 || r.ShapeHeaderBytes >= r.AvgEventBytes {
		t.Errorf("ceiling chain header bytes = %d of %d", r.ShapeHeaderBytes, r.AvgEventBytes)
	}
	if r.GOMAXPROCS != 1 || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("GOMAXPROCS %d in the run, %d after; want 1, %d", r.GOMAXPROCS, runtime.GOMAXPROCS(0), procs)
	}
	var names []string
	var share, cpu float64
	for _, c := range r.CPUByCategory {
		names = append(names, c.Category)
		share += c.Share
		cpu += c.CPUSecPer1000
	}
	if !slices.Equal(names, bench.CategoryNames()) {
		t.Errorf("breakdown categories %v, want %v", names, bench.CategoryNames())
	}
	if r.ProfileSamples > 0 && (math.Abs(share-1) > 1e-6 || math.Abs(cpu-r.CPUSecPer1000) > 1e-6) {
		t.Errorf("breakdown sums to share %v, %v CPU s per 1,000 turns; want 1, %v", share, cpu, r.CPUSecPer1000)
	}
	// A turn stores eight messages, each allocated in the client and the
	// server several times over: kilobytes per turn, not bytes, nor the
	// megabytes a leak per turn would show.
	if r.AllocBytesPerTurn < 4<<10 || r.AllocBytesPerTurn > 4<<20 || r.GCCyclesPer1000 < 0 || math.IsNaN(r.GCCyclesPer1000) {
		t.Errorf("%.0f bytes allocated per turn, %.1f collections per 1,000 turns", r.AllocBytesPerTurn, r.GCCyclesPer1000)
	}
	if r.Raw3HopMsgsPerS <= 0 || r.RawShapePerS <= 0 || r.Ratio <= 0 || r.CeilingRatio <= 0 || r.PeakRSSMB <= 0 || r.AvgEventBytes <= 0 {
		t.Errorf("result %+v", r)
	}
}

// TestBenchAgainstAnExternalServer: with --nats-url the pipeline runs on
// that server, provisioned with --duplicates as the window; a second run
// on the same server is refused, its turns would mix with the first's.
func TestBenchAgainstAnExternalServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys, users, err := natsserver.ServerAuth(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Listen: "127.0.0.1:0", Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	seed := keys.SeedFile(natsserver.IdentityAdmin)
	args := []string{"bench", "--conversations", "20", "--turns", "2", "--raw-msgs", "300", "--duplicates", "20s",
		"--nats-url", srv.ClientURL(), "--nats-nkey", seed, "--json"}
	out, err := runCLI(t, context.Background(), args...)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	if r.Turns != 40 || r.DuplicatesS != 20 {
		t.Errorf("turns %d, window %v s; want 40, 20", r.Turns, r.DuplicatesS)
	}
	nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: srv.ClientURL(), NkeyFile: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(context.Background(), bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	turns := st.CachedInfo().State.Msgs
	if w := st.CachedInfo().Config.Duplicates; w != 20*time.Second {
		t.Errorf("%s duplicate window = %s", bus.StreamTurns, w)
	}
	if turns != 80 {
		t.Errorf("the external server holds %d turns, want 80 (40 user, 40 agent)", turns)
	}
	if out, err := runCLI(t, context.Background(), args...); err == nil || !strings.Contains(out+err.Error(), "fresh server") {
		t.Errorf("a second run on the same server: %v\n%s", err, out)
	}
}

// TestBenchClusterQuick: `rein bench --cluster 3 --quick --json`, small,
// with one and two replicas per stage, prints the promised shape, runs on
// R3 streams, and every turn ends with exactly one stored outcome in each
// run.
func TestBenchClusterQuick(t *testing.T) {
	t.Parallel()
	out, err := runCLI(t, context.Background(), "bench", "--cluster", "3", "--quick", "--conversations", "30", "--turns", "2",
		"--replicas", "1,2", "--json")
	if err != nil {
		t.Fatalf("bench --cluster: %v\n%s", err, out)
	}
	var r struct {
		ClusterNodes *int `json:"cluster_nodes"`
		Runs         []struct {
			ReplicasPerStage *int     `json:"replicas_per_stage"`
			TurnsPerSec      *float64 `json:"turns_per_s"`
			P99Ms            *float64 `json:"p99_ms"`
			Turns            int      `json:"turns"`
			Outcomes         int      `json:"outcomes"`
			StreamReplicas   int      `json:"stream_replicas"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench --cluster --json: %v\n%s", err, out)
	}
	if r.ClusterNodes == nil || *r.ClusterNodes != 3 || len(r.Runs) != 2 {
		t.Fatalf("cluster_nodes and runs: %s", out)
	}
	for i, run := range r.Runs {
		if run.ReplicasPerStage == nil || *run.ReplicasPerStage != i+1 || run.TurnsPerSec == nil || *run.TurnsPerSec <= 0 ||
			run.P99Ms == nil || *run.P99Ms <= 0 {
			t.Errorf("run %d: %s", i, out)
		}
		if run.StreamReplicas != 3 {
			t.Errorf("run %d: REIN_TURNS has %d replicas, want 3", i, run.StreamReplicas)
		}
		if run.Turns != 60 || run.Outcomes != run.Turns {
			t.Errorf("run %d: %d outcomes stored for %d turns, want one each", i, run.Outcomes, run.Turns)
		}
	}
}
