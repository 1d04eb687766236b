package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/app/eval/run"
	rtest "github.com/reinception/rein/internal/testutil"
)

// --held-out takes types out of the taxonomy in use: the rules module no
// longer detects them (it does detect ret-ana-1 and air-ud-1 with the full
// taxonomy), their scenarios are unseen, and the report has both a seen
// and an unseen slice.
func TestEvalRunHeldOutTypesAreUnseen(t *testing.T) {
	t.Parallel()
	scen := subsetScenarios(t, "ret-ana-1", "air-ud-1", "air-ua-1", "air-clean-1")
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "none,rein",
		"--held-out", "anaphora, unsupported_domain", "--out", dir, "--taubench", rtest.TauBench(t))
	if err != nil {
		t.Fatalf("eval run: %v\n%s", err, out)
	}
	results, err := run.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		// The scripted simulators' tokens are estimates; the rules module calls no model.
		if r.AgentTokens == 0 && r.ErrorType == "" || r.UserTokens == 0 && r.ErrorType == "" || r.InceptionTokens != 0 {
			t.Errorf("%s/%s: tokens agent %d, user %d, inception %d", r.Condition, r.ScenarioID, r.AgentTokens, r.UserTokens, r.InceptionTokens)
		}
		wantSeen := r.ScenarioID != "ret-ana-1" && r.ScenarioID != "air-ud-1"
		if r.Seen != wantSeen {
			t.Errorf("%s/%s: seen %v, want %v", r.Condition, r.ScenarioID, r.Seen, wantSeen)
		}
		if r.Condition == "rein" && r.ErrorType != "" && r.Activated != wantSeen {
			t.Errorf("%s: activated %v (%s); the module sees only the seen types", r.ScenarioID, r.Activated, r.DetectedType)
		}
	}
	rep, _ := readReport(t, dir)
	for _, c := range []string{"none", "rein"} {
		cond := rep["conditions"].(map[string]any)[c].(map[string]any)
		by := cond["by_seen"].(map[string]any)
		for _, k := range []string{"seen", "unseen"} {
			if _, ok := by[k]; !ok {
				t.Errorf("%s: by_seen has no %q slice: %v", c, k, by)
			}
		}
		// Clean scenarios are reported apart from the error-only slices.
		if _, ok := by["clean"]; ok {
			t.Errorf("%s: by_seen mixes the clean scenarios in: %v", c, by)
		}
		if _, ok := cond["clean"]; !ok {
			t.Errorf("%s: no clean section", c)
		}
	}

	// Another held-out set in the same run directory is refused, not mixed.
	out, err = runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "none,rein",
		"--held-out", "anaphora", "--out", dir, "--taubench", rtest.TauBench(t))
	if err == nil || !strings.Contains(err.Error(), "another scenario set") {
		t.Errorf("rerun with another held-out set: %v\n%s", err, out)
	}

	// An unknown type is refused before anything is played.
	out, err = runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--held-out", "contradicton",
		"--out", filepath.Join(t.TempDir(), "run2"), "--taubench", rtest.TauBench(t))
	if err == nil || !strings.Contains(err.Error(), `"contradicton" is not in the taxonomy`) {
		t.Errorf("unknown held-out type: %v\n%s", err, out)
	}
}
