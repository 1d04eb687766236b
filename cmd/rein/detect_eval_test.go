package main

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinception/rein/inception/offline"
)

// A tiny labelled set whose scores are worked out by hand below: the rules
// module catches the seat request, the first-class upgrade and the bare
// "cancel it" after two listed reservations, misses the contradiction, and
// wrongly takes PayPal at the airline for an unsupported parameter on a
// turn labelled clean (for the test's sake).
const evalFixture = `{"id":"e1","domain":"airline","messages":[{"role":"user","content":"Can I pick a window seat on my flight?"}],"label":{"rein":true,"error_type":"unsupported_action"}}
{"id":"e2","domain":"airline","messages":[{"role":"user","content":"Upgrade ABC123 to first class."}],"label":{"rein":true,"error_type":"unsupported_parameter"}}
{"id":"e3","domain":"airline","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"You have ABC123 (Boston to Denver) and XYZ789 (Denver to Seattle)."},{"role":"user","content":"Please cancel it."}],"label":{"rein":true,"error_type":"anaphora"}}
{"id":"e4","domain":"airline","messages":[{"role":"user","content":"I'd like to change reservation ABC123 to the 21st."}],"label":{"rein":true,"error_type":"contradiction"},"notes":"the rules cannot know (nor the gate: it names its reservation)"}
{"id":"c1","domain":"airline","messages":[{"role":"user","content":"Cancel reservation XYZ789 please."}],"label":{"rein":false,"error_type":""}}
{"id":"c2","domain":"airline","messages":[{"role":"user","content":"Can I pay with PayPal for the change?"}],"label":{"rein":false,"error_type":""}}
`

func decodeEvalJSON(t *testing.T, stdout string) evalJSON {
	t.Helper()
	var rep evalJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	return rep
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestDetectEvalRulesScoresByHand(t *testing.T) {
	in := writeFile(t, "labelled.jsonl", evalFixture)
	stdout, stderr, err := runDetectCLI(t, "--eval", in, "--module", "rules", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep := decodeEvalJSON(t, stdout)
	if rep.Module != "rules" || rep.Turns != 6 || rep.Erroneous != 4 || rep.Clean != 2 || rep.Failed != 0 || rep.Gate != nil {
		t.Fatalf("report %+v", rep)
	}
	want := map[string][3]float64{ // support, predicted, correct
		"anaphora": {1, 1, 1}, "multiple_interpretation": {0, 0, 0}, "contradiction": {1, 0, 0},
		"unsupported_action": {1, 1, 1}, "unsupported_parameter": {1, 2, 1}, "unsupported_domain": {0, 0, 0},
	}
	for _, s := range rep.Types {
		w := want[s.Type]
		if float64(s.Support) != w[0] || float64(s.Predicted) != w[1] || float64(s.Correct) != w[2] {
			t.Errorf("%s: %+v, want support/predicted/correct %v", s.Type, s, w)
		}
		if s.Type == "unsupported_parameter" && (!near(s.Precision, 0.5) || !near(s.Recall, 1) || !near(s.F1, 2.0/3)) {
			t.Errorf("unsupported_parameter P/R/F1 %+v, want 0.5/1/0.667", s)
		}
	}
	for name, got := range map[string][2]float64{
		"detected":               {rep.Detected, 0.75},  // 3 of 4 erroneous turns
		"exact type":             {rep.ExactType, 1},    // all 3 with the gold type
		"precision":              {rep.Precision, 0.75}, // 3 of 4 activations
		"clean false activation": {rep.CleanFalseActivation, 0.5},
		"core recall":            {rep.CoreRecall, 1},    // anaphora, action, parameter: 3 of 3
		"mean recall":            {rep.MeanRecall, 0.75}, // over the 4 types present
	} {
		if !near(got[0], got[1]) {
			t.Errorf("%s = %v, want %v", name, got[0], got[1])
		}
	}
	if rep.Confusion["contradiction"]["clean"] != 1 || rep.Confusion["clean"]["unsupported_parameter"] != 1 || rep.Confusion["clean"]["clean"] != 1 {
		t.Errorf("confusion %v", rep.Confusion)
	}
}

func TestDetectEvalCascadeGateAndTable(t *testing.T) {
	in := writeFile(t, "labelled.jsonl", evalFixture)
	stdout, stderr, err := runDetectCLI(t, "--eval", in, "--module", "cascade-gate", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep := decodeEvalJSON(t, stdout)
	g := rep.Gate
	if g == nil {
		t.Fatal("no gate figures for the cascade gate")
	}
	// The gate passes everything the precise rules catch (e1–e3, c2) and
	// holds back the plain request c1; e4 carries no signal it reads.
	if g.PassedErroneous != 3 || g.PassedClean != 1 || !near(g.ErroneousRate, 0.75) || !near(g.CleanRate, 0.5) || !near(g.ModelCallsSaved, 2.0/6) {
		t.Errorf("gate %+v", *g)
	}
	if g.MissedByType["contradiction"] != 1 {
		t.Errorf("missed by type %v", g.MissedByType)
	}

	stdout, stderr, err = runDetectCLI(t, "--eval", in, "--module", "rules", "--show-errors")
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"unsupported_parameter", "0.50", "core-type recall", "clean false activations", "50.0%", "confusion"} {
		if !strings.Contains(stdout, frag) {
			t.Errorf("table lacks %q:\n%s", frag, stdout)
		}
	}
	if !strings.Contains(stderr, "e4\tgold contradiction\tgot clean") || !strings.Contains(stderr, "c2\tgold clean\tgot unsupported_parameter") {
		t.Errorf("--show-errors:\n%s", stderr)
	}
}

func TestDetectEvalRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no label", []string{"--eval", writeFile(t, "a.jsonl", `{"id":"x","domain":"airline","messages":[{"role":"user","content":"hi"}]}`+"\n")}, "label"},
		{"rein without type", []string{"--eval", writeFile(t, "b.jsonl", `{"id":"x","domain":"airline","messages":[{"role":"user","content":"hi"}],"label":{"rein":true,"error_type":""}}`+"\n")}, "bad label"},
		{"bad split", []string{"--eval", dir, "--split", "train"}, "--split"},
		{"missing split file", []string{"--eval", dir, "--split", "test"}, "test.jsonl"},
		{"input and eval", []string{"--eval", dir, "--input", "x"}, "none of the others"},
	} {
		if _, _, err := runDetectCLI(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := runDetectCLI(t); err == nil || !strings.Contains(err.Error(), "--input") {
		t.Errorf("no --input nor --eval: %v", err)
	}
}

// TestDetectEvalCascadeAgainstOpenAICompatibleServer scores the cascade
// with its model behind an OpenAI-compatible endpoint, as a user would on
// their own model: the same report, with the cascade's own gate figures,
// and one model call per turn the gate passed.
func TestDetectEvalCascadeAgainstOpenAICompatibleServer(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls.Add(1)
		// A model that sees every error the gate lets through and none else.
		answer := `{"rein":false,"error_type":null,"evidence":"","reasoning":""}`
		// (Quotes the system prompt's own examples do not hold.)
		for _, c := range []struct{ quote, typ string }{
			{"window seat on my flight", "unsupported_action"}, {"ABC123 to first class", "unsupported_parameter"}, {"Please cancel it.", "anaphora"},
		} {
			if strings.Contains(string(body), c.quote) {
				answer = `{"rein":true,"error_type":"` + c.typ + `","evidence":"` + c.quote + `","reasoning":"call the recovery tool"}`
			}
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"local-model",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":`+string(content)+`}}],
			"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	defer srv.Close()
	t.Setenv("REIN_LLM_API_KEY", "sk-local")
	in := writeFile(t, "labelled.jsonl", evalFixture)
	stdout, stderr, err := runDetectCLI(t, "--eval", in, "--module", "cascade", "--provider", "openai", "--model", "local-model", "--base-url", srv.URL+"/v1", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep := decodeEvalJSON(t, stdout)
	if rep.Module != "cascade" || rep.Gate == nil || rep.Gate.PassedErroneous != 3 || rep.Gate.PassedClean != 1 {
		t.Fatalf("report %+v gate %+v", rep, rep.Gate)
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d model calls, want 4 (the turns the gate passed)", n)
	}
	// The model clears the PayPal turn the rules module took for an error.
	if !near(rep.Precision, 1) || !near(rep.Detected, 0.75) || !near(rep.CleanFalseActivation, 0) {
		t.Errorf("precision %v detected %v clean %v", rep.Precision, rep.Detected, rep.CleanFalseActivation)
	}
}

// TestDetectEvalLLMAgainstOpenAICompatibleServer scores the llm module on a
// labelled file through the OpenAI chat-completions wire, with the hard
// cases of the prompt's rules (a pushback on an open request, a complaint
// about the agent, a self-correction, asking for a human): the prompt that
// reaches the endpoint carries the contrasts and rules, the answers are
// parsed and grounded, and the report comes out as for the rules module.
func TestDetectEvalLLMAgainstOpenAICompatibleServer(t *testing.T) {
	const fixture = `{"id":"p1","domain":"airline","messages":[{"role":"user","content":"Can you book me a hotel in Denver for Friday?"},{"role":"assistant","content":"Let me see what I can find."},{"role":"user","content":"That's not helpful."}],"label":{"rein":true,"error_type":"unsupported_domain"}}
{"id":"c1","domain":"airline","messages":[{"role":"user","content":"Move 1N99U6 to the 25th."},{"role":"assistant","content":"I found flights on May 24."},{"role":"user","content":"That's not what I told you earlier, I said the 25th."}],"label":{"rein":false,"error_type":""}}
{"id":"c2","domain":"airline","messages":[{"role":"user","content":"Add insurance to FQ8APE... actually no, forget that, just the bag."}],"label":{"rein":false,"error_type":""}}
{"id":"c3","domain":"retail","messages":[{"role":"user","content":"Can I talk to a real person please?"}],"label":{"rein":false,"error_type":""}}
{"id":"a1","domain":"retail","messages":[{"role":"assistant","content":"You have orders #W1234567 and #W7654321."},{"role":"user","content":"Return that one."}],"label":{"rein":true,"error_type":"anaphora"}}
`
	var calls, withRules atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "local-model" || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		system, user := req.Messages[0].Content, req.Messages[1].Content
		if strings.Contains(system, "Telling confusable types apart:") && strings.Contains(system, "How to judge hard cases:") {
			withRules.Add(1)
		}
		// A model that follows the prompt's rules.
		answer := `{"rein":false,"error_type":null,"evidence":"","reasoning":""}`
		switch {
		case strings.Contains(user, `That's not helpful.`):
			answer = `{"rein":true,"error_type":"unsupported_domain","evidence":"That's not helpful","reasoning":"transfer"}`
		case strings.Contains(user, `Return that one.`):
			answer = `{"rein":true,"error_type":"anaphora","evidence":"Return that one","reasoning":"ask"}`
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-model",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":`+string(content)+`}}],
			"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	defer srv.Close()
	t.Setenv("REIN_LLM_API_KEY", "sk-local")
	in := writeFile(t, "hard.jsonl", fixture)
	stdout, stderr, err := runDetectCLI(t, "--eval", in, "--module", "llm", "--provider", "openai", "--model", "local-model", "--base-url", srv.URL+"/v1", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep := decodeEvalJSON(t, stdout)
	if rep.Module != "llm" || rep.Turns != 5 || rep.Failed != 0 || rep.Gate != nil {
		t.Fatalf("report %+v", rep)
	}
	if calls.Load() != 5 || withRules.Load() != 5 {
		t.Errorf("%d calls, %d with the contrasts and rules in the system prompt; want 5 and 5", calls.Load(), withRules.Load())
	}
	if !near(rep.Detected, 1) || !near(rep.ExactType, 1) || !near(rep.Precision, 1) || !near(rep.CleanFalseActivation, 0) {
		t.Errorf("detected %v exact %v precision %v clean %v", rep.Detected, rep.ExactType, rep.Precision, rep.CleanFalseActivation)
	}
}

// TestDetectTrainGateRoundTrip trains a gate classifier with --train-gate
// and scores the cascade gate with it through --gate-model: the classifier
// can only add passes to the gate's rules. Training on test is refused.
func TestDetectTrainGateRoundTrip(t *testing.T) {
	in := writeFile(t, "labelled.jsonl", evalFixture)
	model := filepath.Join(t.TempDir(), "gate.json")
	if _, stderr, err := runDetectCLI(t, "--eval", in, "--train-gate", model); err != nil || !strings.Contains(stderr, "gate model: 6 turns of labelled.jsonl") {
		t.Fatalf("--train-gate: %v\n%s", err, stderr)
	}
	rulesOnly := evalGate(t, in)
	withModel := evalGate(t, in, "--gate-model", model)
	if withModel.PassedErroneous < rulesOnly.PassedErroneous || withModel.PassedClean < rulesOnly.PassedClean {
		t.Errorf("with the classifier the gate passes %+v, fewer than its rules alone %+v", withModel, rulesOnly)
	}
	builtin := evalGate(t, in, "--gate-model", "builtin")
	if builtin.PassedErroneous < rulesOnly.PassedErroneous {
		t.Errorf("builtin classifier: %+v, rules alone %+v", builtin, rulesOnly)
	}

	dir := t.TempDir()
	for _, split := range []string{"dev", "test"} {
		if err := os.WriteFile(filepath.Join(dir, split+".jsonl"), []byte(evalFixture), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := runDetectCLI(t, "--eval", dir, "--train-gate", model, "--train-splits", "dev,test"); err == nil || !strings.Contains(err.Error(), "never trained on") {
		t.Errorf("training on test: %v", err)
	}
	bad := writeFile(t, "bad-gate.json", `{"format": 1}`)
	if _, _, err := runDetectCLI(t, "--eval", in, "--module", "cascade-gate", "--gate-model", bad); err == nil || !strings.Contains(err.Error(), "--gate-model") {
		t.Errorf("a bad --gate-model file: %v", err)
	}
}

func evalGate(t *testing.T, in string, args ...string) offline.GateScore {
	t.Helper()
	stdout, stderr, err := runDetectCLI(t, append([]string{"--eval", in, "--module", "cascade-gate", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep := decodeEvalJSON(t, stdout)
	if rep.Gate == nil {
		t.Fatal("no gate figures")
	}
	return *rep.Gate
}

// TestDetectTrainTypedRoundTrip trains the typed classifier with
// --train-typed and scores the rules module with it through
// --typed-model (it can only add activations to the rules'); --loao
// prints one row per author group and, like training, refuses test.
func TestDetectTrainTypedRoundTrip(t *testing.T) {
	t.Parallel()
	in := writeFile(t, "labelled.jsonl", evalFixture)
	model := filepath.Join(t.TempDir(), "typed.json")
	if _, stderr, err := runDetectCLI(t, "--eval", in, "--train-typed", model); err != nil || !strings.Contains(stderr, "typed model: 6 turns of labelled.jsonl") {
		t.Fatalf("--train-typed: %v\n%s", err, stderr)
	}
	detected := func(args ...string) float64 {
		t.Helper()
		stdout, stderr, err := runDetectCLI(t, append([]string{"--eval", in, "--module", "rules", "--json"}, args...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		return decodeEvalJSON(t, stdout).Detected
	}
	if alone, with := detected(), detected("--typed-model", model); with < alone {
		t.Errorf("with the typed classifier the rules detect %v, less than alone (%v)", with, alone)
	}
	detected("--typed-model", "builtin")
	if _, _, err := runDetectCLI(t, "--eval", in, "--module", "rules", "--typed-model", model, "--gate-model", model, "--module", "cascade-gate"); err == nil || !strings.Contains(err.Error(), "--gate-model") {
		t.Errorf("a typed model as --gate-model: %v", err)
	}

	dir := t.TempDir()
	for _, split := range []string{"dev", "dev2", "test"} {
		if err := os.WriteFile(filepath.Join(dir, split+".jsonl"), []byte(evalFixture), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, err := runDetectCLI(t, "--eval", dir, "--loao", "dev,dev2", "--json")
	if err != nil {
		t.Fatalf("--loao: %v\n%s", err, stderr)
	}
	var scores []offline.AuthorScore
	if err := json.Unmarshal([]byte(stdout), &scores); err != nil || len(scores) != 2 || scores[0].Held != "dev" || scores[0].Turns != 6 {
		t.Fatalf("--loao: %v, %+v", err, scores)
	}
	for _, args := range [][]string{{"--loao", "dev,test"}, {"--loao", "dev,dev2", "--out-of-author", "test"}, {"--train-typed", model, "--train-splits", "dev,test"}} {
		if _, _, err := runDetectCLI(t, append([]string{"--eval", dir}, args...)...); err == nil || !strings.Contains(err.Error(), "never trained on") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
