package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/telemetry"
)

func TestRequestKeyStability(t *testing.T) {
	base := Request{
		Purpose: PurposeAgent, System: "sys",
		Messages: []Message{userMsg("hi"), {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_abc", Name: "f", Arguments: json.RawMessage(`{"a":1,"b":[1,2]}`)}}},
			{Role: RoleTool, ToolCallID: "call_abc", Name: "f", Content: "ok"}},
		Tools:          []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
		ResponseSchema: &ResponseSchema{Name: "s", Schema: json.RawMessage(`{"type":"object"}`)},
	}
	key := RequestKey(base)
	if !strings.HasPrefix(key, "sha256:") || len(key) != len("sha256:")+32 {
		t.Fatalf("key %q", key)
	}
	same := func(f func(r *Request)) Request {
		r := base
		r.Messages = append([]Message(nil), base.Messages...)
		r.Messages[1].ToolCalls = append([]ToolCall(nil), base.Messages[1].ToolCalls...)
		f(&r)
		return r
	}
	tests := []struct {
		name    string
		req     Request
		sameKey bool
	}{
		{"identical", same(func(*Request) {}), true},
		{"argument whitespace and key order", same(func(r *Request) {
			r.Messages[1].ToolCalls[0].Arguments = json.RawMessage("{ \"b\": [1, 2],\n \"a\": 1 }")
		}), true},
		{"tool call ids are transport details", same(func(r *Request) {
			r.Messages[1].ToolCalls[0].ID = "toolu_xyz"
			r.Messages[2].ToolCallID = "toolu_xyz"
		}), true},
		{"sampling settings are not part of the key", same(func(r *Request) { r.MaxTokens = 99; temp := 0.7; r.Temperature = &temp }), true},
		{"purpose", same(func(r *Request) { r.Purpose = PurposeInception }), false},
		{"system", same(func(r *Request) { r.System = "other" }), false},
		{"message text", same(func(r *Request) { r.Messages[0].Content = "hello" }), false},
		{"argument value", same(func(r *Request) { r.Messages[1].ToolCalls[0].Arguments = json.RawMessage(`{"a":2,"b":[1,2]}`) }), false},
		{"tools", same(func(r *Request) { r.Tools = nil }), false},
		{"schema", same(func(r *Request) { r.ResponseSchema = nil }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RequestKey(tt.req) == key; got != tt.sameKey {
				t.Fatalf("same key = %v, want %v\n%s\n%s", got, tt.sameKey, CanonicalRequest(base), CanonicalRequest(tt.req))
			}
		})
	}
}

// TestRecordThenReplay records a scripted agent run through New(Record:…),
// then replays it offline with New(Cassette:…) and gets the same answers.
func TestRecordThenReplay(t *testing.T) {
	cassette := filepath.Join(t.TempDir(), "run.jsonl")
	rec, _ := newClient(t, Config{Script: "testdata/airline_demo.yaml", Record: cassette})
	reqs := []Request{
		{Purpose: PurposeInception, Messages: []Message{userMsg("I want that one instead")}},
		{Purpose: PurposeAgent, Messages: []Message{userMsg("show reservation ABC123")}},
		{Purpose: PurposeAgent, Messages: []Message{userMsg("hello")}},
		{Purpose: PurposeAgent, Messages: []Message{userMsg("hello")}}, // same key twice
	}
	var want []Response
	for _, r := range reqs {
		resp, err := rec.Chat(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, resp)
	}
	lines := readLines(t, cassette)
	if len(lines) != len(reqs) {
		t.Fatalf("cassette has %d lines, want %d", len(lines), len(reqs))
	}
	var e CassetteEntry
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil {
		t.Fatal(err)
	}
	if e.Key != RequestKey(reqs[1]) || e.Provider != ProviderScripted || e.Model != "airline-demo" || e.Response.ToolCalls[0].Name != "get_reservation_details" {
		t.Fatalf("entry = %+v", e)
	}

	rp, reg := newClient(t, Config{Cassette: cassette})
	if rp.Provider() != ProviderReplay || rp.Model() != "airline-demo" {
		t.Fatalf("identity %s/%s", rp.Provider(), rp.Model())
	}
	for i, r := range reqs {
		got, err := rp.Chat(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want[i])
		if string(a) != string(b) {
			t.Fatalf("replay %d = %s, want %s", i, a, b)
		}
	}
	if v := metricValue(t, reg, telemetry.MModelRequests, map[string]string{"provider": "replay", "outcome": OutcomeOK}); v != float64(len(reqs)) {
		t.Fatalf("replay ok requests = %v", v)
	}

	miss := Request{Purpose: PurposeAgent, Messages: []Message{userMsg("never recorded")}}
	_, err := rp.Chat(context.Background(), miss)
	if !errors.Is(err, ErrCassetteMiss) || !strings.Contains(err.Error(), RequestKey(miss)) {
		t.Fatalf("miss err = %v, want ErrCassetteMiss naming %s", err, RequestKey(miss))
	}
	if v := metricValue(t, reg, telemetry.MModelRequests, map[string]string{"provider": "replay", "outcome": OutcomeError}); v != 1 {
		t.Fatalf("replay error requests = %v", v)
	}
}

func TestReplayRepeatedKeyAnswersInOrder(t *testing.T) {
	req := Request{Purpose: PurposeUser, Messages: []Message{userMsg("same")}}
	path := filepath.Join(t.TempDir(), "c.jsonl")
	var sb strings.Builder
	for _, content := range []string{"first", "second"} {
		b, _ := json.Marshal(CassetteEntry{Key: RequestKey(req), Provider: "openai", Model: "m", Response: Response{Content: content}})
		sb.Write(b)
		sb.WriteString("\n\n") // blank lines are allowed
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenCassette(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 3; i++ {
		resp, err := r.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Content)
	}
	if strings.Join(got, ",") != "first,second,second" {
		t.Fatalf("answers = %v", got)
	}
}

func TestOpenCassetteMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	good, _ := json.Marshal(CassetteEntry{Key: "sha256:00", Response: Response{Content: "x"}})
	if err := os.WriteFile(path, []byte(string(good)+"\n{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenCassette(path)
	if !errors.Is(err, ErrCassette) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want ErrCassette naming line 2", err)
	}
}

func TestRecorderSkipsFailures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	c, _ := newClient(t, Config{Script: "testdata/airline_demo.yaml", Record: path})
	s, err := ParseScript([]byte("rules: [{when: {user: x}, error: down}]"))
	if err != nil {
		t.Fatal(err)
	}
	failing, err := NewRecorder(NewScripted(s), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failing.Chat(context.Background(), Request{Messages: []Message{userMsg("x")}}); !errors.Is(err, ErrSimulated) {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Chat(context.Background(), Request{Messages: []Message{userMsg("hello")}}); err != nil {
		t.Fatal(err)
	}
	if n := len(readLines(t, path)); n != 1 {
		t.Fatalf("%d lines recorded, want 1 (failures are not recorded)", n)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
