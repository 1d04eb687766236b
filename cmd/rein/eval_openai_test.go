package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinception/rein/internal/app/eval/run"
	rtest "github.com/reinception/rein/internal/testutil"
)

// fakeChatServer speaks the OpenAI chat completions wire format for both
// the agent and the user simulator (told apart by the simulator's system
// prompt): the agent transfers to a human when the user insists and
// answers plainly otherwise; the user says one thing, then stops.
func fakeChatServer(t *testing.T, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		raw, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role      string `json:"role"`
				Content   any    `json:"content"`
				ToolCalls []struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		users := 0
		for _, m := range req.Messages {
			if m.Role == "user" {
				users++
			}
		}
		last := req.Messages[len(req.Messages)-1].Role
		// A planted think step is the agent's own reasoning, not an action
		// to report on: the agent goes on deciding as it would.
		if n := len(req.Messages); last == "tool" && n >= 2 {
			if tc := req.Messages[n-2].ToolCalls; len(tc) == 1 && tc[0].Function.Name == "think" {
				last = "user"
			}
		}
		message := `{"role":"assistant","content":"Sure, that is done."}`
		finish := "stop"
		switch {
		case strings.Contains(string(raw), "You play a customer"):
			text := "###STOP###"
			if len(req.Messages) == 2 { // system + the agent's greeting
				text = "Hello, I would like to change my flight."
			}
			message = `{"role":"assistant","content":"` + text + `"}`
		case last == "tool":
			message = `{"role":"assistant","content":"A human agent will take it from here."}`
		case users >= 2:
			message = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"transfer_to_human_agents","arguments":"{\"summary\":\"the customer insists\"}"}}]}`
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-model","choices":[{"index":0,"finish_reason":"`+
			finish+`","message":`+message+`}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
}

// rein eval run drives the agent and the user simulator on an
// OpenAI-compatible server through the openai provider, counts their
// tokens and records their calls.
func TestEvalRunAgainstOpenAICompatibleServer(t *testing.T) {
	var calls atomic.Int32
	srv := fakeChatServer(t, &calls)
	defer srv.Close()
	t.Setenv("REIN_LLM_API_KEY", "sk-local")
	scen := subsetScenarios(t, "air-ua-1", "air-clean-1")
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "none,rein", "--trials", "1", "--out", dir,
		"--taubench", rtest.TauBench(t), "--record",
		"--agent-provider", "openai", "--agent-model", "local-model", "--agent-base-url", srv.URL+"/v1",
		"--user-provider", "openai", "--user-model", "local-model", "--user-base-url", srv.URL+"/v1")
	if err != nil {
		t.Fatalf("eval run: %v\n%s", err, out)
	}
	if calls.Load() == 0 || !strings.Contains(out, "played 4, resumed 0, failed 0") || strings.Contains(out, "harness, not a model") {
		t.Errorf("%d calls; output:\n%s", calls.Load(), out)
	}
	m, err := run.ReadManifest(dir)
	if err != nil || m.Agent != "openai local-model" || m.User != "openai local-model" || m.Note != "" {
		t.Errorf("manifest %+v, %v", m, err)
	}
	results, err := run.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results {
		if r.AgentTokens == 0 || len(r.AgentLatencyMs) == 0 {
			t.Errorf("%s/%s: agent tokens %d, latencies %v", r.Condition, r.ScenarioID, r.AgentTokens, r.AgentLatencyMs)
		}
		// The server reports 15 tokens a call: the counts are its, not estimates.
		// (air-ua-1 goes to a human at turn 2, before the simulator speaks.)
		if r.AgentTokens%15 != 0 || r.UserTokens%15 != 0 || (r.ScenarioID == "air-clean-1") != (r.UserTokens > 0) {
			t.Errorf("%s/%s: agent tokens %d, user tokens %d; want multiples of the 15 the server reports", r.Condition, r.ScenarioID, r.AgentTokens, r.UserTokens)
		}
		// The follow-up ("please check again") makes this agent transfer:
		// the unsupported scenario succeeds without rein too.
		if r.ScenarioID == "air-ua-1" && (!r.Success || !r.Transferred) {
			t.Errorf("%s/%s: %+v", r.Condition, r.ScenarioID, r)
		}
	}
	rep, _ := readReport(t, dir)
	tok := rep["conditions"].(map[string]any)["none"].(map[string]any)["tokens_per_turn"].(map[string]any)
	// The headline is over error scenarios only, and air-ua-1 ends before
	// the simulator speaks: its user tokens are checked per result above.
	if tok["agent"].(float64) <= 0 {
		t.Errorf("tokens_per_turn %v", tok)
	}
	for _, purpose := range []string{"agent", "user_simulator"} {
		if fi, err := os.Stat(filepath.Join(dir, run.CassettesDir, purpose+".jsonl")); err != nil || fi.Size() == 0 {
			t.Errorf("cassette %s: %v", purpose, err)
		}
	}
}

// When the inception model cannot be reached the cascade decides with its
// rules: such a decision is marked in results.jsonl (fallback_turns),
// counted in report.json (fallback_decisions) and named in the summary.
// The error turn is judged (--plant-at error-turn): the cascade's rules gate
// reads the newest user turn, and the opening's follow-up carries no cue.
func TestEvalMarksCascadeFallbacks(t *testing.T) {
	t.Setenv("REIN_LLM_API_KEY", "sk-local")
	scen := subsetScenarios(t, "ret-ana-1", "air-clean-1")
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runCLI(t, context.Background(), "eval", "run", "--scenarios", scen, "--conditions", "none,rein", "--trials", "1",
		"--plant-at", "error-turn", "--out", dir, "--taubench", rtest.TauBench(t), "--module", "cascade",
		"--inception-provider", "openai", "--inception-model", "m", "--inception-base-url", "http://127.0.0.1:1/v1")
	if err != nil {
		t.Fatalf("eval run: %v\n%s", err, out)
	}
	results, err := run.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range results {
		if r.Condition == "rein" && r.ErrorType != "" && r.FallbackTurns != r.JudgedTurns {
			t.Errorf("%s: %d fallback turns of %d judged; the model is unreachable", r.ScenarioID, r.FallbackTurns, r.JudgedTurns)
		}
		if r.Condition == "none" && r.FallbackTurns != 0 {
			t.Errorf("none/%s: %d fallback turns", r.ScenarioID, r.FallbackTurns)
		}
		total += r.FallbackTurns
	}
	if total == 0 {
		t.Fatal("no fallback decision marked")
	}
	rep, _ := readReport(t, dir)
	rein := rep["conditions"].(map[string]any)["rein"].(map[string]any)
	got := rein["fallback_decisions"].(float64) + rein["clean"].(map[string]any)["fallback_decisions"].(float64)
	if int(got) != total {
		t.Errorf("report counts %v fallback decisions, results.jsonl %d", got, total)
	}
	if !strings.Contains(out, "rein: "+strconv.Itoa(total)+" decisions were the cascade's rules fallback") {
		t.Errorf("the summary does not name the fallbacks:\n%s", out)
	}
}
