package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/app/eval/generate"
	rtest "github.com/reinception/rein/internal/testutil"
)

// fakeGeneratorServer speaks the OpenAI chat completions wire format as a
// scenario generator: a good unsupported_action opening, a contradiction
// whose error turn lacks the error (its evidence is not in it) every time,
// and an anaphora whose mishandling already asks which one is meant —
// mended when it is asked again with the reason.
func fakeGeneratorServer(t *testing.T, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	mistake := regexp.MustCompile(`<mistake name=\\?"([a-z_]+)`)
	style := regexp.MustCompile(`<style>([a-z_]+)</style>`)
	uid := regexp.MustCompile(`user ([a-z_]+_[0-9]+):`)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		raw, _ := io.ReadAll(r.Body)
		body := string(raw)
		if !strings.Contains(body, "rein_scenario_opening") {
			http.Error(w, "no response schema", http.StatusBadRequest)
			return
		}
		m, s, u := mistake.FindStringSubmatch(body), style.FindStringSubmatch(body), uid.FindStringSubmatch(body)
		if m == nil || s == nil || u == nil {
			http.Error(w, "not a generator request", http.StatusBadRequest)
			return
		}
		follow := "That's not what I meant."
		if s[1] == "double_check" {
			follow = "Could you double-check that for me?"
		}
		d := map[string]any{"readings": []string{"a", "b"}, "follow_up": follow, "note": "fake"}
		switch m[1] {
		case "unsupported_action":
			d["error_turn"] = "Hi, I am " + u[1] + ". Please also mail me a printed copy of my itinerary."
			d["evidence"] = []string{"mail me a printed copy of my itinerary"}
			d["mishandling"] = "Of course, a printed copy is on its way to you."
		case "contradiction":
			d["error_turn"] = "Hi, I am " + u[1] + ". I want a one-way trip to Seattle."
			d["evidence"] = []string{"one-way trip", "coming back on the 25th"}
			d["mishandling"] = "Sure, searching one-way flights now."
		default:
			d["error_turn"] = "Hi, I am " + u[1] + ". Could you cancel that one?"
			d["evidence"] = []string{"cancel that one"}
			d["mishandling"] = "Which reservation do you mean?"
			if strings.Contains(body, "cannot be used: mishandling already recovers") {
				d["mishandling"] = "Done, I have cancelled your most recent reservation."
			}
		}
		content, _ := json.Marshal(d)
		msg, _ := json.Marshal(map[string]any{"role": "assistant", "content": string(content)})
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-model","choices":[{"index":0,"finish_reason":"stop","message":`+
			string(msg)+`}],"usage":{"prompt_tokens":900,"completion_tokens":120,"total_tokens":1020}}`)
	}))
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 || sc.Bytes()[0] == '#' {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// Generation against an OpenAI-compatible server writes the accepted
// scenarios (a loadable scenario file) and the rejected openings with
// their reasons; --tasks keeps it to 2 tasks × 3 types × 2 styles first
// calls, and each rejection is asked once more (--attempts 2); the
// recorded calls replay, offline, to the same files byte for byte.
func TestEvalGenerateAgainstOpenAICompatibleServerAndReplay(t *testing.T) {
	var calls atomic.Int32
	srv := fakeGeneratorServer(t, &calls)
	defer srv.Close()
	t.Setenv("REIN_LLM_API_KEY", "sk-local")
	tmp := t.TempDir()
	rec := filepath.Join(tmp, "rec")
	first := filepath.Join(tmp, "a", "gen.jsonl")
	if err := os.MkdirAll(filepath.Dir(first), 0o755); err != nil {
		t.Fatal(err)
	}
	common := []string{"eval", "scenarios", "generate", "--domain", "airline", "--tasks", "2", "--seed", "5",
		"--types", "anaphora,contradiction,unsupported_action", "--taubench", rtest.TauBench(t)}
	out, err := runCLI(t, context.Background(), append(common, "--out", first, "--record", rec,
		"--provider", "openai", "--model", "local-model", "--base-url", srv.URL+"/v1")...)
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, out)
	}
	if n := calls.Load(); n != 20 {
		t.Errorf("%d model calls, want 20 (2 tasks × 3 types × 2 styles, and the 8 first rejections again)", n)
	}
	if !strings.Contains(out, "8 accepted and 2 clean") || !strings.Contains(out, "4 rejected") {
		t.Errorf("output:\n%s", out)
	}
	raw, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eval.LoadScenarios(bytes.NewReader(raw), eval.LoadOptions{})
	if err != nil {
		t.Fatalf("the accepted file does not load: %v", err)
	}
	if len(set) != 10 {
		t.Errorf("%d scenarios, want 8 error and 2 clean", len(set))
	}
	for _, s := range set {
		if s.Clean() {
			continue
		}
		mended := s.ErrorType == eval.TypeAnaphora && strings.Contains(s.Note, "attempt 2")
		if (s.ErrorType != eval.TypeUnsupportedAction && !mended) || s.Opening == nil || !strings.Contains(s.Note, "local-model") {
			t.Errorf("accepted %+v", s)
		}
	}
	if err := eval.NewTaskSource(rtest.TauBench(t)).Check(set); err != nil {
		t.Error(err)
	}
	rejected := readLines(t, generate.RejectedPath(first))
	if len(rejected) != 4 {
		t.Fatalf("%d rejected lines, want 4", len(rejected))
	}
	for _, r := range rejected {
		want := `evidence "coming back on the 25th" is not in the error turn`
		if r["error_type"] != "contradiction" || r["reason"] != want || r["draft"] == nil || r["attempts"] != 2.0 {
			t.Errorf("%s: %s reason %q after %v attempts, want a contradiction rejected for %q", r["id"], r["error_type"], r["reason"], r["attempts"], want)
		}
	}

	// Replay: offline (the server is not asked), the same files.
	second := filepath.Join(tmp, "b", "gen.jsonl")
	if err := os.MkdirAll(filepath.Dir(second), 0o755); err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	out, err = runCLI(t, context.Background(), append(common, "--out", second, "--replay-from", rec)...)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if calls.Load() != before {
		t.Errorf("the replay asked the server %d times", calls.Load()-before)
	}
	for _, p := range [][2]string{{first, second}, {generate.RejectedPath(first), generate.RejectedPath(second)}} {
		a, _ := os.ReadFile(p[0])
		b, _ := os.ReadFile(p[1])
		if !bytes.Equal(a, b) {
			t.Errorf("%s and %s differ:\n%s\n---\n%s", p[0], p[1], a, b)
		}
	}

	// Another seed asks other questions: the replay misses and writes nothing.
	third := filepath.Join(tmp, "c", "gen.jsonl")
	if err := os.MkdirAll(filepath.Dir(third), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, context.Background(), "eval", "scenarios", "generate", "--domain", "airline", "--tasks", "2", "--seed", "6",
		"--types", "anaphora", "--taubench", rtest.TauBench(t), "--out", third, "--replay-from", rec); err == nil ||
		!strings.Contains(err.Error(), "not in") {
		t.Errorf("replay with another seed: %v", err)
	}
	if _, err := os.Stat(third); err == nil {
		t.Error("a failed replay wrote the scenario file")
	}

	// Recording over an existing cassette is refused (a replay would mix the two).
	if _, err := runCLI(t, context.Background(), append(common, "--out", second, "--record", rec,
		"--provider", "openai", "--model", "local-model", "--base-url", srv.URL+"/v1")...); err == nil ||
		!strings.Contains(err.Error(), "already holds a recording") {
		t.Errorf("recording over a cassette: %v", err)
	}
}

// The offline path: the built-in scripted generator writes a loadable
// scenario set without a model.
func TestEvalGenerateScriptedOffline(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gen.jsonl")
	res, err := runCLI(t, context.Background(), "eval", "scenarios", "generate", "--provider", "scripted", "--domain", "retail",
		"--tasks", "1", "--out", out, "--taubench", rtest.TauBench(t))
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, res)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eval.LoadScenarios(bytes.NewReader(raw), eval.LoadOptions{})
	if err != nil || len(set)+len(readLines(t, generate.RejectedPath(out))) != 12+1 {
		t.Fatalf("%d scenarios, %v\n%s", len(set), err, res)
	}
	// The paper's filter (reconstructed) keeps 73 of the 115 retail test
	// tasks; the drawn task is one of them.
	if !strings.Contains(res, "retail test: kept 73 of 115 tasks") {
		t.Errorf("no kept-task count:\n%s", res)
	}
	tasks, err := taubench.LoadTasks(filepath.Join(rtest.TauBench(t), "retail"), "test")
	if err != nil {
		t.Fatal(err)
	}
	keep := eval.PaperTasks("retail", tasks)
	for _, s := range set {
		if !slices.Contains(keep, s.TaskID) {
			t.Errorf("%s: task %d is not one the filter keeps", s.ID, s.TaskID)
		}
	}
}

// An --out whose directory is missing is refused before any model call,
// not after the whole generation.
func TestEvalGenerateRefusesAMissingOutDirectoryFirst(t *testing.T) {
	var calls atomic.Int32
	srv := fakeGeneratorServer(t, &calls)
	defer srv.Close()
	t.Setenv("REIN_LLM_API_KEY", "sk-local")
	tmp := t.TempDir()
	out := filepath.Join(tmp, "missing", "gen.jsonl")
	_, err := runCLI(t, context.Background(), "eval", "scenarios", "generate", "--domain", "airline", "--tasks", "1",
		"--types", "anaphora", "--taubench", rtest.TauBench(t), "--out", out, "--record", filepath.Join(tmp, "rec"),
		"--provider", "openai", "--model", "local-model", "--base-url", srv.URL+"/v1")
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err %v, want the missing directory named", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d model calls before the refusal", n)
	}
	if _, err := os.Stat(filepath.Join(tmp, "rec")); err == nil {
		t.Error("the recording directory was created before the refusal")
	}
}
