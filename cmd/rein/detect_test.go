package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// runDetectCLI runs `rein detect` in-process and returns stdout, stderr and
// the error.
func runDetectCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"detect"}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const detectInputJSONL = `{"id":"a1","domain":"airline","messages":[{"role":"user","content":"Can I pick a window seat on my flight?"}]}
{"id":"a2","domain":"airline","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"How can I help?"},{"role":"user","content":"Upgrade reservation ABC123 to first class."}]}
this is not json
{"id":"r1","domain":"retail","messages":[{"role":"user","content":"I want to cancel or return my order #W1234567."}]}
{"id":"r2","domain":"retail","messages":[{"role":"user","content":"Please return order #W1234567, the shoes are too small."}]}
{"id":"bad-role","domain":"retail","messages":[{"role":"robot","content":"x"},{"role":"user","content":"y"}]}

{"id":"bad-last","domain":"airline","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}
`

func decodeDetectLines(t *testing.T, stdout string) map[string]detectOutput {
	t.Helper()
	got := map[string]detectOutput{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var o detectOutput
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		got[o.ID] = o
	}
	return got
}

func TestDetectRulesBothDomains(t *testing.T) {
	in := writeFile(t, "in.jsonl", detectInputJSONL)
	stdout, stderr, err := runDetectCLI(t, "--module", "rules", "--domain", "airline", "--input", in, "--summary")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("err = %v, want exit code 1 for the bad lines", err)
	}
	got := decodeDetectLines(t, stdout)
	want := map[string]string{"a1": "unsupported_action", "a2": "unsupported_parameter", "r1": "multiple_interpretation", "r2": ""}
	if len(got) != len(want) {
		t.Fatalf("got %d output lines, want %d:\n%s", len(got), len(want), stdout)
	}
	for id, typ := range want {
		o := got[id]
		gotType := ""
		if o.ErrorType != nil {
			gotType = *o.ErrorType
		}
		if gotType != typ || o.Rein != (typ != "") || o.Module != "rules" || o.Failed {
			t.Errorf("%s: %+v, want %q", id, o, typ)
		}
		if o.Rein && (o.Evidence == "" || o.Reasoning == "") {
			t.Errorf("%s: activation without evidence or reasoning: %+v", id, o)
		}
	}
	for _, frag := range []string{"line 3: bad input line", "line 6: bad input line", "messages[0].role", "line 8: bad input line", "last message",
		"unsupported_action", "(activated)", "(judged)"} {
		if !strings.Contains(stderr, frag) {
			t.Errorf("stderr lacks %q:\n%s", frag, stderr)
		}
	}
}

func TestDetectToolsFileAndErrors(t *testing.T) {
	tools := writeFile(t, "tools.json", `[{"type":"function","function":{"name":"update","description":"d","parameters":{"type":"object","properties":{"cabin":{"type":"string","enum":["economy","first_class"]}}}}}]`)
	in := writeFile(t, "in.jsonl", `{"id":"x","messages":[{"role":"user","content":"Upgrade ABC123 to first class."}]}`+"\n")
	stdout, _, err := runDetectCLI(t, "--domain", "airline", "--tools", tools, "--input", in)
	if err != nil {
		t.Fatal(err)
	}
	if o := decodeDetectLines(t, stdout)["x"]; o.Rein {
		t.Errorf("first_class is accepted by the given tools, got %+v", o)
	}
	if _, _, err := runDetectCLI(t, "--input", in, "--taxonomy", writeFile(t, "t.yaml", "version: [\n")); err == nil || !strings.Contains(err.Error(), "t.yaml:1") {
		t.Errorf("bad taxonomy: %v", err)
	}
	if _, _, err := runDetectCLI(t, "--input", in, "--module", "magic"); err == nil {
		t.Error("unknown module accepted")
	}
	// System and tool messages are not the surface dialogue: skipped, not refused.
	withSystem := writeFile(t, "sys.jsonl", `{"id":"s","messages":[{"role":"system","content":"You are an airline agent."},{"role":"user","content":"Book me a hotel in Denver too."}]}`+"\n")
	if stdout, _, err := runDetectCLI(t, "--domain", "airline", "--input", withSystem); err != nil || !decodeDetectLines(t, stdout)["s"].Rein {
		t.Errorf("a dialogue with a system message: %v %s", err, stdout)
	}
	// No domain anywhere: the line is bad.
	if _, stderr, err := runDetectCLI(t, "--input", in); err == nil || !strings.Contains(stderr, "line 1") {
		t.Errorf("missing domain: %v %s", err, stderr)
	}
}

// TestDetectLLMAgainstOpenAICompatibleServer drives --module llm through the
// openai provider against a local server speaking the chat completions
// wire format.
func TestDetectLLMAgainstOpenAICompatibleServer(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		calls.Add(1)
		answer := `{"rein":false,"error_type":null,"evidence":"","reasoning":""}`
		if strings.Contains(string(body), "Kindly cancel that one") {
			answer = `{"rein":true,"error_type":"anaphora","evidence":"cancel that one","reasoning":"call ambiguity_report"}`
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"local-model",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":`+string(content)+`}}],
			"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	defer srv.Close()
	t.Setenv("REIN_LLM_API_KEY", "sk-local")
	in := writeFile(t, "in.jsonl", `{"id":"q1","domain":"airline","messages":[{"role":"user","content":"Kindly cancel that one."}]}
{"id":"q2","domain":"airline","messages":[{"role":"user","content":"Cancel reservation ABC123."}]}
`)
	stdout, stderr, err := runDetectCLI(t, "--module", "llm", "--provider", "openai", "--model", "local-model",
		"--base-url", srv.URL+"/v1", "--domain", "airline", "--input", in)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	got := decodeDetectLines(t, stdout)
	if o := got["q1"]; !o.Rein || o.ErrorType == nil || *o.ErrorType != "anaphora" || o.Module != "llm" || !strings.Contains(o.Reasoning, "ambiguity_report") {
		t.Errorf("q1: %+v", o)
	}
	if o := got["q2"]; o.Rein || o.Failed {
		t.Errorf("q2: %+v", o)
	}
	if calls.Load() != 2 {
		t.Errorf("%d model calls, want 2", calls.Load())
	}
}
