package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/rules"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/app/eval/run"
	rtest "github.com/reinception/rein/internal/testutil"
)

// recordingModule keeps the dialogue of every input that reached the
// inception module, then lets the rules module judge it.
type recordingModule struct {
	inner inception.Module
	mu    sync.Mutex
	seen  [][]inception.Utterance
}

func (m *recordingModule) Name() string { return m.inner.Name() }

func (m *recordingModule) Detect(ctx context.Context, in inception.Input) (inception.Decision, error) {
	m.mu.Lock()
	m.seen = append(m.seen, slices.Clone(in.Dialogue))
	m.mu.Unlock()
	return m.inner.Detect(ctx, in)
}

// playOnce plays scenario id under rein once with the fixed trigger at the
// planting point plantAt ("" for the default), through the real pipeline,
// and returns its recorded play and the module's inputs.
func playOnce(t *testing.T, id, plantAt string) (run.Play, [][]inception.Utterance) {
	t.Helper()
	var s eval.Scenario
	for _, b := range eval.BundledQuick(eval.LoadOptions{}) {
		if b.ID == id {
			s = b
		}
	}
	if s.ID == "" {
		t.Fatalf("no bundled scenario %s", id)
	}
	rules, err := rules.New(rules.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mod := &recordingModule{inner: rules}
	dir := filepath.Join(t.TempDir(), "run")
	_, err = run.Run(context.Background(), run.Config{
		Scenarios: []eval.Scenario{s}, Conditions: []string{eval.ConditionRein}, Trials: 1, PlantAt: plantAt,
		TauBench: rtest.TauBench(t), Dir: dir, TurnTimeout: time.Minute,
	}, run.Deps{Start: evalRuntime{logLevel: "error", detectorTimeout: 30 * time.Second, maxSteps: 30}.starter(), Module: mod})
	if err != nil {
		t.Fatal(err)
	}
	mod.mu.Lock()
	defer mod.mu.Unlock()
	return readPlay(t, dir, eval.ConditionRein, id+".t1"), mod.seen
}

// The paper's protocol, the default: the thought is planted once, after
// the recorded opening — the error turn, the agent's mishandling and the
// follow-up — before the agent's first own decision, and the module judged
// all three opening messages. On the code before, the module judged the
// bare error turn and the thought came before the mishandling.
func TestDefaultPlantsAfterTheRecordedOpening(t *testing.T) {
	t.Parallel()
	p, inputs := playOnce(t, "ret-ana-1", "")
	if len(p.Turns) < 2 {
		t.Fatalf("%d turns", len(p.Turns))
	}
	op := bundledOpening(t, "ret-ana-1")
	first, second := p.Turns[0], p.Turns[1]
	if first.Injected || first.Detection.Model != "not-judged" {
		t.Errorf("error turn judged or planted: %+v", first)
	}
	if first.Reply != op.Mishandling {
		t.Errorf("turn 1 reply %q, want the recorded mishandling", first.Reply)
	}
	if !second.Injected || second.User != op.FollowUp || second.Detection.ErrorType != "anaphora" {
		t.Errorf("follow-up turn not planted: %+v", second)
	}
	if len(inputs) == 0 {
		t.Fatal("the module judged nothing")
	}
	want := []inception.Utterance{{Role: inception.RoleUser, Text: op.ErrorTurn}, {Role: inception.RoleAgent, Text: op.Mishandling},
		{Role: inception.RoleUser, Text: op.FollowUp}}
	if !slices.Equal(inputs[0], want) {
		t.Errorf("module's input:\n%+v\nwant the whole opening:\n%+v", inputs[0], want)
	}
	// The rules module judges the newest user turn, so it is then asked
	// about the opening's earlier user turn (a prefix of the opening).
	for _, in := range inputs[1:] {
		if len(in) >= len(want) || !slices.Equal(in, want[:len(in)]) {
			t.Errorf("a later input is not a prefix of the opening: %+v", in)
		}
	}
	if !p.Result.Activated || p.Result.PlantTurn != eval.FollowUpTurnIndex || !slices.Equal(p.Result.ActivationTurns, []int{2}) {
		t.Errorf("result %+v", p.Result)
	}
}

// --plant-at error-turn keeps the earlier behaviour as an ablation: the
// bare error turn is judged and planted, before the mishandling.
func TestPlantAtErrorTurnAblation(t *testing.T) {
	t.Parallel()
	p, inputs := playOnce(t, "ret-ana-1", run.PlantErrorTurn)
	if !p.Turns[0].Injected || p.Turns[1].Injected {
		t.Errorf("turns %+v", p.Turns[:2])
	}
	if len(inputs) != 1 || len(inputs[0]) != 1 {
		t.Errorf("module's inputs %+v, want the error turn alone", inputs)
	}
	if !p.Result.Activated || p.Result.PlantTurn != eval.ErrorTurnIndex {
		t.Errorf("result %+v", p.Result)
	}
}

func bundledOpening(t *testing.T, id string) eval.Opening {
	t.Helper()
	for _, s := range eval.BundledQuick(eval.LoadOptions{}) {
		if s.ID == id && s.Opening != nil {
			return *s.Opening
		}
	}
	t.Fatalf("no opening %s", id)
	return eval.Opening{}
}

// The rein-no-tool ablation: the same module plants the same plan, but
// with no recovery tool to act on the agent cannot recover (the paper's
// finding that the tool is what makes the plan work).
func TestEvalReinNoToolAblation(t *testing.T) {
	t.Parallel()
	scen := subsetScenarios(t, "ret-ana-1", "air-ua-1")
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "rein,rein-no-tool",
		"--trials", "1", "--out", dir, "--taubench", rtest.TauBench(t))
	if err != nil {
		t.Fatalf("eval run: %v\n%s", err, out)
	}
	results, err := run.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results {
		if !r.Activated {
			t.Errorf("%s/%s: the module did not activate", r.Condition, r.ScenarioID)
		}
		if want := r.Condition == eval.ConditionRein; r.Success != want {
			t.Errorf("%s/%s: success %v, want %v", r.Condition, r.ScenarioID, r.Success, want)
		}
	}
	if !strings.Contains(out, "rein-no-tool") {
		t.Errorf("the summary leaves the ablation out:\n%s", out)
	}
}
