package taubench

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinception/rein/internal/testutil"
)

// taubenchDir finds ../shared/taubench next to the module root. Without it
// the fixture tests skip, unless CI is set.
func taubenchDir(t testing.TB) string {
	t.Helper()
	return testutil.TauBench(t)
}

var (
	fixtureMu      sync.Mutex
	fixtureDomains = map[string]*Domain{}
)

func fixtureDomain(t testing.TB, name string) *Domain {
	t.Helper()
	dir := taubenchDir(t)
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if d, ok := fixtureDomains[name]; ok {
		return d
	}
	d, err := Load(name, filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	fixtureDomains[name] = d
	return d
}

func TestUntouchedFingerprints(t *testing.T) {
	for name, want := range map[string]string{
		Airline: "4587e6b48ad2b2c4f3e1fecb40aabec7bb2286513273b8f8cec3f5865222f290",
		Retail:  "5a4b2cb59f4d12dea7e4adff24a7f8fada510ead49372ea4a729a82bbb5f49b5",
	} {
		d := fixtureDomain(t, name)
		if got := d.BaseFingerprint(); got != want {
			t.Errorf("%s base fingerprint = %s, want %s", name, got, want)
		}
		if got := d.NewSession().Fingerprint(); got != want {
			t.Errorf("%s fresh session fingerprint = %s, want %s", name, got, want)
		}
	}
}

// TestGroundTruthOracle replays every task of every split and compares the
// fingerprint, every observation and every changed record with the oracle.
func TestGroundTruthOracle(t *testing.T) {
	dir := taubenchDir(t)
	ctx := context.Background()
	total := 0
	for _, name := range []string{Airline, Retail} {
		d := fixtureDomain(t, name)
		splits, err := Splits(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, split := range splits {
			tasks, err := LoadTasks(filepath.Join(dir, name), split)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "oracle", "gt_replay_"+name+"_"+split+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var oracle oracleFile
			if err := json.Unmarshal(raw, &oracle); err != nil {
				t.Fatal(err)
			}
			if len(oracle.Tasks) != len(tasks) {
				t.Fatalf("%s/%s: %d oracle tasks, %d tasks", name, split, len(oracle.Tasks), len(tasks))
			}
			for i, task := range tasks {
				total++
				o := oracle.Tasks[i]
				s, steps, err := d.ReplayGroundTruth(ctx, task)
				if err != nil {
					t.Fatalf("%s/%s #%d: %v", name, split, i, err)
				}
				if got := s.Fingerprint(); got != o.GTDataHash {
					t.Errorf("%s/%s #%d: hash %s, want %s", name, split, i, got, o.GTDataHash)
				}
				if len(steps) != len(o.Replay) {
					t.Errorf("%s/%s #%d: %d steps, oracle %d", name, split, i, len(steps), len(o.Replay))
					continue
				}
				for j, want := range o.Replay {
					if steps[j].Name != want.Name || steps[j].Skipped != want.Skipped {
						t.Errorf("%s/%s #%d step %d: %s skipped=%v, want %s skipped=%v", name, split, i, j, steps[j].Name, steps[j].Skipped, want.Name, want.Skipped)
					}
					if want.Observation != nil && steps[j].Observation != *want.Observation {
						t.Errorf("%s/%s #%d step %d (%s):\n got %.300s\nwant %.300s", name, split, i, j, want.Name, steps[j].Observation, *want.Observation)
					}
				}
				diff, err := compareChanged(s, o.ChangedRecords)
				if err != nil {
					t.Fatal(err)
				}
				if diff != "" {
					t.Errorf("%s/%s #%d: changed records: %s", name, split, i, diff)
				}
				if unchanged := len(s.Changed()) == 0; unchanged && !o.DBUnchanged {
					t.Errorf("%s/%s #%d: replay changed nothing, oracle says it changed", name, split, i)
				}
			}
		}
	}
	if total != 685 {
		t.Errorf("replayed %d tasks, want 685", total)
	}
}

func loadTrajectories(t *testing.T) []trajectoryRecord {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(taubenchDir(t), "trajectories", "gpt-4o-airline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []trajectoryRecord
	if err := json.Unmarshal(raw, &runs); err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestTrajectoryRewards replays the 200 recorded GPT-4o airline runs:
// every recorded reward and the 1,044 reproducible observations match; the
// 120 others are get_user_details outputs of the old "province" data.
func TestTrajectoryRewards(t *testing.T) {
	d := fixtureDomain(t, Airline)
	runs := loadTrajectories(t)
	if len(runs) != 200 {
		t.Fatalf("%d runs, want 200", len(runs))
	}
	obs, ok := 0, 0
	successes := map[int]int{}
	for _, r := range runs {
		rep, err := d.ReplayTrajectory(context.Background(), r.Info.Task, r.Traj)
		if err != nil {
			t.Fatalf("task %d trial %d: %v", r.TaskID, r.Trial, err)
		}
		if rep.Reward != r.Reward {
			t.Errorf("task %d trial %d: reward %v, recorded %v", r.TaskID, r.Trial, rep.Reward, r.Reward)
		}
		for _, name := range rep.Mismatched {
			if name != "get_user_details" {
				t.Errorf("task %d trial %d: %s observation not reproduced", r.TaskID, r.Trial, name)
			}
		}
		obs += rep.Observations
		ok += rep.ObservationsOK
		if Success(rep.Reward) {
			successes[r.TaskID]++
		}
	}
	if obs != 1164 || ok != 1044 {
		t.Errorf("observations reproduced %d/%d, want 1044/1164", ok, obs)
	}
	counts := make([]int, 50)
	for id, c := range successes {
		counts[id] = c
	}
	got := PassHatK(counts, 4)
	for k, want := range []float64{0.42, 0.2733, 0.22, 0.20} {
		if math.Abs(got[k]-want) > 5e-5 {
			t.Errorf("pass^%d = %.4f, want %.4f", k+1, got[k], want)
		}
	}
}

func TestCheckFixtures(t *testing.T) {
	dir := taubenchDir(t)
	var out strings.Builder
	sum, err := Check(context.Background(), dir, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"gt_tasks": 685, "gt_hash_match": 685, "gt_observation_match": 1525, "gt_observations": 1525, "trajectories": 200, "trajectory_reward_match": 200}`
	if got := sum.JSONLine(); got != want {
		t.Errorf("summary %s\nwant    %s", got, want)
	}
	if !sum.OK() || sum.TrajObservationsOK != 1044 {
		t.Errorf("summary not OK: %+v", sum)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 685+200+4 {
		t.Errorf("%d output lines, want %d", lines, 685+200+4)
	}
}

// TestFixtureToolsOverride: a tools.json beside the data replaces our descriptions.
func TestFixtureToolsOverride(t *testing.T) {
	for _, name := range []string{Airline, Retail} {
		d := fixtureDomain(t, name)
		raw, err := os.ReadFile(filepath.Join(taubenchDir(t), name, "tools.json"))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := decodeTools(raw)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := ToolCatalogue(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Tools()) != len(ref) || len(ours) != len(ref) {
			t.Fatalf("%s: %d tools, reference %d", name, len(d.Tools()), len(ref))
		}
		for i, tool := range d.Tools() {
			if tool.Name != ref[i].Name || tool.Description != ref[i].Description {
				t.Errorf("%s tool %d: %s %q, want %s %q", name, i, tool.Name, tool.Description, ref[i].Name, ref[i].Description)
			}
			if ours[i].Name != ref[i].Name {
				t.Errorf("%s catalogue tool %d is %s, want %s", name, i, ours[i].Name, ref[i].Name)
			}
			if !sameParams(ours[i].Parameters, ref[i].Parameters) || !sameSchemaShape(t, ours[i].Parameters, ref[i].Parameters) {
				t.Errorf("%s %s: parameters differ from the reference", name, ours[i].Name)
			}
		}
	}
}

// sameSchemaShape compares two JSON Schemas ignoring descriptions.
func sameSchemaShape(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	strip(x)
	strip(y)
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

func strip(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "description")
		for _, e := range x {
			strip(e)
		}
	case []any:
		for _, e := range x {
			strip(e)
		}
	}
}
