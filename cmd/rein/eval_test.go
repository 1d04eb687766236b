package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/app/eval/run"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/bus"
)

// subsetScenarios writes the bundled scenarios with the given ids to a
// scenario file.
func subsetScenarios(t *testing.T, ids ...string) string {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var b bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(eval.BundledJSONL()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &s) == nil && want[s.ID] {
			b.Write(sc.Bytes())
			b.WriteByte('\n')
			delete(want, s.ID)
		}
	}
	if len(want) > 0 {
		t.Fatalf("not bundled: %v", want)
	}
	path := filepath.Join(t.TempDir(), "scenarios.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// keptOnFailure is a temporary directory that is removed when the test
// passes and kept (and named) when it fails, with the pipelines' stores a
// run kept in it.
func keptOnFailure(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// readPlay reads one stored play of a run directory.
func readPlay(t *testing.T, dir, condition, name string) run.Play {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, run.PlaysDir, condition, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var p run.Play
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func readReport(t *testing.T, dir string) (map[string]any, []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, eval.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r, raw
}

// The Done-when of issue 21: the bundled set under all four conditions,
// two trials, offline through the embedded server, then rein eval report.
func TestEvalRunBundledOffline(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("plays 240 conversations through the pipeline")
	}
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runCLI(t, context.Background(), "eval", "run", "--quick", "--conditions", "none,rein,npi,self-refine",
		"--trials", "2", "--out", dir, "--taubench", rtest.TauBench(t))
	if err != nil {
		t.Fatalf("eval run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "played 240, resumed 0, failed 0") {
		t.Errorf("run output:\n%s", out)
	}
	r, first := readReport(t, dir)
	if r["trials"] != 2.0 || r["scenarios"] != 30.0 {
		t.Errorf("trials %v scenarios %v", r["trials"], r["scenarios"])
	}
	if note, _ := r["note"].(string); !strings.Contains(note, "measure the harness, not a model") {
		t.Errorf("note %q", note)
	}
	conds := r["conditions"].(map[string]any)
	pass := map[string]float64{}
	for _, c := range eval.Conditions {
		m, ok := conds[c].(map[string]any)
		if !ok {
			t.Fatalf("condition %s missing: %v", c, conds)
		}
		p := m["pass_at_1"].(map[string]any)
		v, lo, hi := p["value"].(float64), p["ci_low"].(float64), p["ci_high"].(float64)
		if lo > v || v > hi {
			t.Errorf("%s: pass@1 %v outside [%v, %v]", c, v, lo, hi)
		}
		pass[c] = v
		for _, k := range []string{"pass_hat_k", "activation_rate", "false_activation_rate", "over_deferral_rate", "tokens_per_turn", "latency_ms_p50", "kappa", "by_error_type", "by_domain", "by_seen"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: no %s", c, k)
			}
		}
		_, hasP := m["mcnemar_p"]
		if hasP != (c != eval.ConditionNone) {
			t.Errorf("%s: mcnemar_p present %v", c, hasP)
		}
		if c != eval.ConditionRein && m["activation_rate"].(float64) != 0 {
			t.Errorf("%s activated: %v", c, m["activation_rate"])
		}
	}
	rein := conds["rein"].(map[string]any)
	if a := rein["activation_rate"].(float64); a <= 0 {
		t.Errorf("rein never activated at the error turn")
	}
	if lat := rein["latency_ms_p50"].(map[string]any); lat["rein"].(float64) <= 0 {
		t.Errorf("rein latency %v", lat)
	}
	// With the scripted agent, recovery happens only when rein plants it.
	if pass["rein"] <= pass["none"] {
		t.Errorf("pass@1 rein %v, none %v", pass["rein"], pass["none"])
	}
	for _, chart := range []string{eval.ChartPassAt1, eval.ChartActivationType} {
		svg, err := os.ReadFile(filepath.Join(dir, chart))
		if err != nil || !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("%s: %v", chart, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, eval.ReportMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range eval.Conditions {
		if !bytes.Contains(md, []byte(c)) {
			t.Errorf("report.md does not mention %s", c)
		}
	}
	// The headline is over error scenarios only and equals what
	// results.jsonl gives, in report.json and in the CLI summary.
	headline := headlineFromResults(t, dir)
	for c, want := range headline {
		got := conds[c].(map[string]any)["pass_at_1"].(map[string]any)["value"].(float64)
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: report.json pass@1 %v, results.jsonl's error scenarios give %v", c, got, want)
		}
		if line := fmt.Sprintf("%.3f [", want); !strings.Contains(out, line) {
			t.Errorf("%s: the CLI summary lacks the headline %s:\n%s", c, line, out)
		}
	}
	if headline["none"] != 0 {
		t.Errorf("the scripted agent recovers nothing without rein, yet none's headline is %v", headline["none"])
	}
	// rein eval report rebuilds the same report from results.jsonl.
	if out, err = runCLI(t, context.Background(), "eval", "report", dir); err != nil {
		t.Fatalf("eval report: %v\n%s", err, out)
	}
	if _, again := readReport(t, dir); !bytes.Equal(first, again) {
		t.Error("rein eval report wrote another report.json than rein eval run")
	}
	if !strings.Contains(out, "self-refine") || !strings.Contains(out, "pass@1") {
		t.Errorf("report output:\n%s", out)
	}
	// A rerun finds every play finished and plays nothing.
	if out, err = runCLI(t, context.Background(), "eval", "run", "--quick", "--trials", "2", "--out", dir, "--taubench", rtest.TauBench(t)); err != nil || !strings.Contains(out, "played 0, resumed 240") {
		t.Errorf("rerun: %v\n%s", err, out)
	}
}

// headlineFromResults recomputes each condition's headline Pass@1 from
// results.jsonl alone: over error scenarios (error_type not none), the mean
// over scenarios of the fraction of trials that succeeded.
func headlineFromResults(t *testing.T, dir string) map[string]float64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, run.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ cond, id string }
	wins, plays := map[key]int{}, map[key]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var r struct {
			Condition  string `json:"condition"`
			ScenarioID string `json:"scenario_id"`
			ErrorType  string `json:"error_type"`
			Success    bool   `json:"success"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.ErrorType == "" {
			continue
		}
		k := key{r.Condition, r.ScenarioID}
		plays[k]++
		if r.Success {
			wins[k]++
		}
	}
	sum, n := map[string]float64{}, map[string]int{}
	for k, p := range plays {
		sum[k.cond] += float64(wins[k]) / float64(p)
		n[k.cond]++
	}
	out := map[string]float64{}
	for c := range sum {
		out[c] = sum[c] / float64(n[c])
	}
	return out
}

func resultLines(t *testing.T, dir string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, run.ResultsFile))
	if err != nil {
		return 0
	}
	return bytes.Count(raw, []byte("\n"))
}

// A run stopped midway continues where it stopped: finished plays are not
// played again, a results line cut short by the kill is dropped, and the
// finished run has each play exactly once.
func TestEvalRunResumesAfterKill(t *testing.T) {
	t.Parallel()
	// Two domains and two conditions: four pipelines to stop and resume.
	scen := subsetScenarios(t, "air-ana-1", "ret-ud-1", "air-clean-1")
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"eval", "run", "--scenarios", scen, "--conditions", "none,rein", "--trials", "2", "--concurrency", "1", "--out", dir, "--taubench", rtest.TauBench(t)}
	ctx, kill := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := runCLI(t, ctx, args...)
		done <- err
	}()
	rtest.CheckFor(t, 60*time.Second, "three plays finished", func() bool { return resultLines(t, dir) >= 3 })
	kill()
	if err := <-done; err == nil {
		t.Fatal("the killed run reported success")
	}
	before := resultLines(t, dir)
	// The kill cut a results line short.
	f, err := os.OpenFile(filepath.Join(dir, run.ResultsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"condition":"none","scenario_id":"air-a`)
	f.Close()

	out, err := runCLI(t, context.Background(), args...)
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	var played, resumed, failed int
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "played ") {
			_, _ = fmtSscanf(line, &played, &resumed, &failed)
		}
	}
	const total = 2 * 3 * 2
	if resumed != before || played != total-before || failed != 0 {
		t.Errorf("before %d: played %d resumed %d failed %d\n%s", before, played, resumed, failed, out)
	}
	results, err := run.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range results {
		k := r.Condition + "/" + r.ScenarioID + "/" + string(rune('0'+r.Trial))
		if seen[k] {
			t.Errorf("%s recorded twice", k)
		}
		seen[k] = true
	}
	if len(results) != total || resultLines(t, dir) != total {
		t.Errorf("%d results, %d lines; want %d", len(results), resultLines(t, dir), total)
	}
	if _, err := os.Stat(filepath.Join(dir, eval.ReportJSON)); err != nil {
		t.Errorf("no report after the resumed run: %v", err)
	}
}

// testAgentScript is a scripted agent for the replay test: recorded like
// any model (the built-in simulator is not a model and is not recorded).
const testAgentScript = `name: replay-test-agent
rules:
  - when: {purpose: agent, last_role: user, turn: 2, user: '(?i)check|sure'}
    respond:
      tool_calls: [{name: transfer_to_human_agents, arguments: {summary: 'asked to check again'}}]
  - when: {purpose: agent, last_tool: transfer_to_human_agents}
    respond: {content: 'A human agent will take over.', usage: {input: 100, output: 10}}
default:
  respond: {content: 'Done as you asked.', usage: {input: 80, output: 5}}
`

// A run recorded with --record replays offline, from its cassettes, to the
// same plays and the same report (latencies aside, which are measured).
func TestEvalRecordedRunReplays(t *testing.T) {
	t.Parallel()
	scen := subsetScenarios(t, "air-ana-2", "air-ua-1", "ret-ud-1", "ret-clean-2")
	script := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(script, []byte(testAgentScript), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(keptOnFailure(t), "recorded")
	out, err := runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "none,rein,self-refine", "--trials", "2",
		"--out", rec, "--taubench", rtest.TauBench(t), "--agent-provider", "scripted", "--agent-script", script, "--record")
	if err != nil {
		t.Fatalf("recorded run: %v\n%s", err, out)
	}
	for _, purpose := range []string{"agent", "user_simulator"} {
		if fi, err := os.Stat(filepath.Join(rec, run.CassettesDir, purpose+".jsonl")); err != nil || fi.Size() == 0 {
			t.Fatalf("cassette %s: %v", purpose, err)
		}
	}
	// The replay names providers that would need a network: every call
	// must come from the cassettes.
	rep := filepath.Join(keptOnFailure(t), "replayed")
	out, err = runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "none,rein,self-refine", "--trials", "2",
		"--out", rep, "--taubench", rtest.TauBench(t), "--replay-from", rec,
		"--agent-provider", "openai", "--agent-base-url", "http://127.0.0.1:1/v1", "--user-provider", "openai", "--user-base-url", "http://127.0.0.1:1/v1")
	if err != nil {
		t.Fatalf("replayed run: %v\n%s", err, out)
	}
	a, _ := readReport(t, rec)
	b, _ := readReport(t, rep)
	stripLatency(a)
	stripLatency(b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("replayed report differs:\nrecorded %s\nreplayed %s", ja, jb)
	}
	agentTokens := a["conditions"].(map[string]any)["none"].(map[string]any)["tokens_per_turn"].(map[string]any)["agent"].(float64)
	if agentTokens <= 0 {
		t.Errorf("agent tokens per turn %v: the scripted usage was not counted", agentTokens)
	}
}

// stripLatency removes the measured latencies (and the note naming the
// providers) from a parsed report.
func stripLatency(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "latency_ms_p50")
		delete(x, "latency_ms_p95")
		delete(x, "note")
		for _, e := range x {
			stripLatency(e)
		}
	case []any:
		for _, e := range x {
			stripLatency(e)
		}
	}
}

// fmtSscanf reads run's "played N, resumed M, failed F; …" line.
func fmtSscanf(line string, played, resumed, failed *int) (int, error) {
	return fmt.Sscanf(line, "played %d, resumed %d, failed %d;", played, resumed, failed)
}

// The trigger mode decides which user turns the module judges: fixed only
// the error turn, dynamic every one.
func TestEvalRunTriggerModes(t *testing.T) {
	t.Parallel()
	scen := subsetScenarios(t, "ret-ana-1")
	base := t.TempDir()
	for _, trigger := range []string{"fixed", "dynamic"} {
		dir := filepath.Join(base, trigger)
		out, err := runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "rein", "--trigger", trigger,
			"--out", dir, "--taubench", rtest.TauBench(t))
		if err != nil {
			t.Fatalf("%s: %v\n%s", trigger, err, out)
		}
		p := readPlay(t, dir, "rein", "ret-ana-1.t1")
		if len(p.Turns) < 2 {
			t.Fatalf("%s: %d turns", trigger, len(p.Turns))
		}
		for _, turn := range p.Turns {
			judged := turn.Detection.Model != "not-judged"
			// Dynamic judges every turn from the planting point on: the
			// error turn is answered by the recorded mishandling.
			if want := trigger == "dynamic" && turn.Turn >= eval.FollowUpTurnIndex || turn.Turn == eval.FollowUpTurnIndex; judged != want {
				t.Errorf("%s: turn %d judged %v (detection %+v)", trigger, turn.Turn, judged, turn.Detection)
			}
		}
		// The planting point is the opening's follow-up (in dynamic mode
		// too, the activation counted as the scenario's is there).
		if plant := p.Turns[eval.FollowUpTurnIndex-1]; !p.Result.Activated || plant.Detection.ErrorType != "anaphora" || !plant.Injected {
			t.Errorf("%s: planting turn %+v, result %+v", trigger, plant, p.Result)
		}
	}
	// The two runs side by side.
	cmp := filepath.Join(base, "compare.md")
	out, err := runCLI(t, context.Background(), "eval", "report", "--compare", filepath.Join(base, "fixed"), filepath.Join(base, "dynamic"), "--out", cmp)
	if err != nil {
		t.Fatalf("compare: %v\n%s", err, out)
	}
	written, _ := os.ReadFile(cmp)
	if !strings.Contains(out, "fixed") || !strings.Contains(out, "dynamic") || !strings.Contains(out, "anaphora") || string(written) != out {
		t.Errorf("comparison:\n%s", out)
	}
}

// A turn whose outcome never comes fails its play with a report of where
// the turn is (what each stream stores for the conversation, what each
// stage's durable holds, the agent worker's state, the connections), and
// the pipeline's JetStream store is kept, so that a failure under load
// explains itself. The agent's model here never answers.
func TestEvalTurnWithoutOutcomeExplainsItself(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "stopped", http.StatusServiceUnavailable)
	}))
	t.Cleanup(model.Close)
	t.Cleanup(func() { close(release) })
	scen := subsetScenarios(t, "air-ana-2")
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "none", "--trials", "1",
		"--out", dir, "--taubench", rtest.TauBench(t), "--turn-timeout", "8s", "--log-level", "error",
		"--agent-provider", "openai", "--agent-model", "m", "--agent-base-url", model.URL+"/v1")
	if err == nil {
		t.Fatalf("the run succeeded with a model that never answers:\n%s", out)
	}
	msg := err.Error()
	for _, want := range []string{
		// Turn 1's reply is the scenario's recorded opening; turn 2 needs
		// the model.
		"turn 2: no outcome: context deadline exceeded",
		"turn 2 heard: detection true, task true, steps [], reply false",
		bus.StreamTurns + " [user#1:1 agent#2:1 user#3:2]",
		bus.StreamTasks + " [task#1:1 task#2:2]",
		bus.StreamTasks + "/" + bus.DurableAgentWorker + ": pending 0, ack pending 1",
		"agent state: ",
		"in_flight{agentworker} 1",
		"connections: rein-eval-none",
		"server slow consumers 0",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q:\n%s", want, msg)
		}
	}
	kept := filepath.Join(dir, run.PipelinesDir, "none-airline")
	if !strings.Contains(msg, "store kept in "+kept) {
		t.Errorf("the failure does not name the kept store %s:\n%s", kept, msg)
	}
	if _, err := os.Stat(filepath.Join(kept, "jetstream")); err != nil {
		t.Errorf("the pipeline's store was not kept: %v", err)
	}
}

// The player's collector hears outcomes on a core NATS subscription, which
// delivers at most once: a connection the server drops loses them. Here
// the collector hears nothing at all, and every turn's outcome is read
// from the streams instead (every 100 ms without one): the play ends as
// it would have, detection and injection included.
func TestEvalReadsOutcomesTheCollectorMissed(t *testing.T) {
	evalPipelineStarted = func(p *evalPipeline) {
		p.refillEvery = 100 * time.Millisecond
		p.col.Close()
	}
	t.Cleanup(func() { evalPipelineStarted = nil })
	scen := subsetScenarios(t, "ret-ana-1")
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "rein",
		"--out", dir, "--taubench", rtest.TauBench(t), "--turn-timeout", "30s")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p := readPlay(t, dir, "rein", "ret-ana-1.t1")
	// The thought is planted after the recorded opening, at user turn 2.
	if len(p.Turns) < 2 || !p.Turns[1].Injected || p.Turns[1].Detection.ErrorType != "anaphora" {
		t.Fatalf("play %+v", p)
	}
	for _, turn := range p.Turns {
		if turn.Reply == "" && turn.Escalation == "" {
			t.Errorf("turn %d has no outcome: %+v", turn.Turn, turn)
		}
	}
}
