package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
)

func mustScript(t testing.TB, src string) *Scripted {
	t.Helper()
	s, err := ParseScript([]byte(src))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	return NewScripted(s)
}

func userMsg(s string) Message { return Message{Role: RoleUser, Content: s} }

func TestScriptedRules(t *testing.T) {
	c := mustScript(t, `
name: unit
rules:
  - name: inception-anaphora
    when: {purpose: inception, user: '(?i)\b(?P<phrase>that one)\b'}
    respond:
      json: {rein: true, error_type: anaphora, evidence: '{{.user.phrase}}', quote: '{{.last_user}}'}
  - name: inception-clear
    when: {purpose: inception}
    respond: {json: {rein: false, error_type: null}}
  - name: lookup
    when: {purpose: agent, last_role: user, user: 'reservation (?P<res_id>[A-Z0-9]{6})', not_called: [get_reservation_details]}
    respond:
      tool_calls:
        - name: get_reservation_details
          arguments: {reservation_id: '{{.user.res_id}}', nested: {list: ['{{.turn}}', 2]}}
  - name: status
    when: {purpose: agent, last_tool: get_reservation_details, user: '(?P<res_id>[A-Z0-9]{6})', tool_result: '"status": "(?P<status>\w+)"'}
    respond: {content: '{{.user.res_id}} is {{.result.status}} ({{.rule}})'}
  - name: follow-thought
    when: {purpose: agent, thought: 'call (?P<tool>\w+)', not_called: [transfer_to_human_agents]}
    respond:
      tool_calls: [{name: '{{.thought.tool}}', arguments: {summary: 'x'}}]
  - name: second-turn
    when: {purpose: agent, turn: 2}
    respond: {content: 'turn two'}
  - name: with-schema
    when: {schema: verdict}
    respond: {json: {ok: true}}
default:
  respond: {content: 'default answer'}
`)
	think := func(thought string) Message {
		args, _ := json.Marshal(map[string]string{"thought": thought})
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "t1", Name: "think", Arguments: args}}}
	}
	tests := []struct {
		name      string
		req       Request
		content   string
		toolName  string
		toolArgs  string
		toolID    string
		wantError error
	}{
		{name: "inception with template and JSON escaping",
			req:     Request{Purpose: PurposeInception, Messages: []Message{userMsg(`I want "that one" cancelled`)}},
			content: `{"error_type":"anaphora","evidence":"that one","quote":"I want \"that one\" cancelled","rein":true}`},
		{name: "inception falls through to clear",
			req:     Request{Purpose: PurposeInception, Messages: []Message{userMsg("hello")}},
			content: `{"error_type":null,"rein":false}`},
		{name: "purpose gates rules: agent does not get inception answer",
			req:     Request{Purpose: PurposeAgent, Messages: []Message{userMsg("that one")}},
			content: "default answer"},
		{name: "tool call with templated nested arguments",
			req:      Request{Purpose: PurposeAgent, Messages: []Message{userMsg("show reservation ABC123")}},
			toolName: "get_reservation_details", toolArgs: `{"nested":{"list":["1",2]},"reservation_id":"ABC123"}`, toolID: "call_s1_0_0"},
		{name: "tool result regex and last tool",
			req: Request{Purpose: PurposeAgent, Messages: []Message{
				userMsg("show reservation ABC123"),
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "get_reservation_details", Arguments: json.RawMessage(`{}`)}}},
				{Role: RoleTool, ToolCallID: "c1", Content: `{"status": "active"}`},
			}},
			content: "ABC123 is active (status)"},
		{name: "think thought drives the tool",
			req:      Request{Purpose: PurposeAgent, Messages: []Message{userMsg("book me a hotel"), think("I must call transfer_to_human_agents now"), {Role: RoleTool, ToolCallID: "t1"}}},
			toolName: "transfer_to_human_agents", toolArgs: `{"summary":"x"}`, toolID: "call_s1_1_0"},
		{name: "not_called stops the repeat",
			req: Request{Purpose: PurposeAgent, Messages: []Message{userMsg("book me a hotel"), think("call transfer_to_human_agents"), {Role: RoleTool, ToolCallID: "t1"},
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c2", Name: "transfer_to_human_agents", Arguments: json.RawMessage(`{}`)}}}, {Role: RoleTool, ToolCallID: "c2"}}},
			content: "default answer"},
		{name: "thought of an earlier turn does not count",
			req:     Request{Purpose: PurposeAgent, Messages: []Message{userMsg("a"), think("call foo"), {Role: RoleAssistant, Content: "ok"}, userMsg("b")}},
			content: "turn two"},
		{name: "schema matcher",
			req:     Request{Purpose: "judge", ResponseSchema: &ResponseSchema{Name: "verdict"}, Messages: []Message{userMsg("x")}},
			content: `{"ok":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.Chat(context.Background(), tt.req)
			if tt.wantError != nil {
				if !errors.Is(err, tt.wantError) {
					t.Fatalf("err = %v, want %v", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != tt.content {
				t.Errorf("content = %q, want %q", resp.Content, tt.content)
			}
			if resp.Model != "unit" {
				t.Errorf("model = %q", resp.Model)
			}
			if tt.toolName == "" {
				if len(resp.ToolCalls) != 0 {
					t.Errorf("unexpected tool calls %+v", resp.ToolCalls)
				}
				return
			}
			if len(resp.ToolCalls) != 1 {
				t.Fatalf("tool calls = %+v", resp.ToolCalls)
			}
			tc := resp.ToolCalls[0]
			if tc.Name != tt.toolName || string(tc.Arguments) != tt.toolArgs || tc.ID != tt.toolID {
				t.Errorf("tool call = %s %s %s, want %s %s %s", tc.ID, tc.Name, tc.Arguments, tt.toolID, tt.toolName, tt.toolArgs)
			}
			if resp.StopReason != "tool_calls" {
				t.Errorf("stop reason %q", resp.StopReason)
			}
		})
	}
}

func TestScriptedIdentity(t *testing.T) {
	c := mustScript(t, "name: sim\ndefault: {respond: {content: hi}}\n")
	if c.Provider() != "scripted" || c.Model() != "sim" {
		t.Fatalf("identity = %s/%s", c.Provider(), c.Model())
	}
}

func TestScriptedFailures(t *testing.T) {
	c := mustScript(t, `
rules:
  - when: {user: OUTAGE}
    error: simulated outage
  - when: {user: SLOW}
    latency: 1h
    respond: {content: late}
  - when: {user: BADGROUP}
    respond: {content: '{{.user.nope}}'}
`)
	deadline := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	tests := []struct {
		name string
		ctx  context.Context
		user string
		want error
	}{
		{"error rule", context.Background(), "OUTAGE", ErrSimulated},
		{"latency honours ctx deadline", deadline(), "SLOW", context.DeadlineExceeded},
		{"no rule and no default", context.Background(), "hello", ErrNoRule},
		{"template names a missing group", context.Background(), "BADGROUP", ErrScript},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Chat(tt.ctx, Request{Messages: []Message{userMsg(tt.user)}})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestScriptedLatency(t *testing.T) {
	c := mustScript(t, "default: {latency: 15ms, respond: {content: hi}}\n")
	start := time.Now()
	if _, err := c.Chat(context.Background(), Request{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 15*time.Millisecond {
		t.Fatalf("answered after %s, want >= 15ms", d)
	}
}

func TestParseScriptErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown field", "rules: [{when: {purpose: agent, colour: red}, respond: {content: x}}]", "colour"},
		{"bad regex", "rules: [{name: r1, when: {user: '('}, respond: {content: x}}]", "rule 1 (r1): when.user"},
		{"bad template", "rules: [{respond: {content: '{{.user'}}]", "respond.content"},
		{"no answer", "rules: [{when: {purpose: agent}}]", "needs `respond` or `error`"},
		{"content and json", "rules: [{respond: {content: x, json: {a: 1}}}]", "both `content` and `json`"},
		{"bad latency", "rules: [{latency: soon, respond: {content: x}}]", "latency"},
		{"bad role", "rules: [{when: {last_role: system}, respond: {content: x}}]", "last_role"},
		{"arguments not object", "rules: [{respond: {tool_calls: [{name: f, arguments: [1]}]}}]", "must be an object"},
		{"default with when", "default: {when: {purpose: x}, respond: {content: x}}", "default"},
		{"empty", "name: x", "no rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScript([]byte(tt.src))
			if !errors.Is(err, ErrScript) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrScript mentioning %q", err, tt.want)
			}
		})
	}
}

// TestExampleScriptAgentLoop runs the shipped example through a whole agent
// turn: user → tool call → tool result → tool call → tool result → reply,
// and an injected think step → recovery tool → reply.
func TestExampleScriptAgentLoop(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	c, err := New(Config{Script: "testdata/airline_demo.yaml"}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Provider() != ProviderScripted || c.Model() != "airline-demo" {
		t.Fatalf("identity %s/%s", c.Provider(), c.Model())
	}
	ctx := context.Background()
	run := func(msgs []Message) []Message {
		t.Helper()
		for step := 0; step < 10; step++ {
			resp, err := c.Chat(ctx, Request{Purpose: PurposeAgent, Messages: msgs})
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, Message{Role: RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
			if len(resp.ToolCalls) == 0 {
				return msgs
			}
			for _, tc := range resp.ToolCalls {
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: `{"status": "confirmed"}`})
			}
		}
		t.Fatal("agent loop did not end")
		return nil
	}
	msgs := run([]Message{userMsg("Please cancel my reservation ZFA04Y")})
	var calls []string
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.Name+string(tc.Arguments))
		}
	}
	want := []string{`get_reservation_details{"reservation_id":"ZFA04Y"}`, `cancel_reservation{"reservation_id":"ZFA04Y"}`}
	if strings.Join(calls, " ") != strings.Join(want, " ") {
		t.Fatalf("calls = %v, want %v", calls, want)
	}
	if got := msgs[len(msgs)-1].Content; got != "Reservation ZFA04Y is cancelled." {
		t.Fatalf("reply = %q", got)
	}

	// Inception on an unsupported request, then the agent with the planted think step.
	user := "Can I get a price match on my flight?"
	inc, err := c.Chat(ctx, Request{Purpose: PurposeInception, Messages: []Message{userMsg(user)}, ResponseSchema: &ResponseSchema{Name: "inception"}})
	if err != nil {
		t.Fatal(err)
	}
	var verdict struct {
		Rein      bool   `json:"rein"`
		ErrorType string `json:"error_type"`
		Evidence  string `json:"evidence"`
		Reasoning string `json:"reasoning"`
	}
	if err := json.Unmarshal([]byte(inc.Content), &verdict); err != nil {
		t.Fatal(err)
	}
	if !verdict.Rein || verdict.ErrorType != "unsupported_action" || verdict.Evidence != "price match" {
		t.Fatalf("verdict = %+v", verdict)
	}
	thought, _ := json.Marshal(map[string]string{"thought": verdict.Reasoning})
	msgs = run([]Message{userMsg(user),
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "inj", Name: "think", Arguments: thought}}},
		{Role: RoleTool, ToolCallID: "inj", Name: "think"}})
	last := msgs[len(msgs)-1]
	if !strings.Contains(last.Content, "human colleague") || msgs[3].ToolCalls[0].Name != "transfer_to_human_agents" {
		t.Fatalf("transcript = %+v", msgs)
	}

	clear, err := c.Chat(ctx, Request{Purpose: PurposeInception, Messages: []Message{userMsg("What is my baggage allowance?")}})
	if err != nil || clear.Content != `{"error_type":null,"evidence":"","reasoning":"","rein":false}` {
		t.Fatalf("clear = %q, %v", clear.Content, err)
	}
	if got := metricValue(t, reg, telemetry.MModelRequests, map[string]string{"provider": "scripted", "model": "airline-demo", "purpose": PurposeAgent, "outcome": OutcomeOK}); got != 5 {
		t.Fatalf("agent requests = %v, want 5", got)
	}
}

func BenchmarkScripted(b *testing.B) {
	c, err := New(Config{Script: "testdata/airline_demo.yaml"}, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	reqs := []Request{
		{Purpose: PurposeInception, Messages: []Message{userMsg("Can I pay for that one with PayPal?")}},
		{Purpose: PurposeInception, Messages: []Message{userMsg("What is my baggage allowance?")}},
		{Purpose: PurposeAgent, Messages: []Message{userMsg("Please cancel my reservation ZFA04Y")}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := c.Chat(ctx, reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseScriptJSON(t *testing.T) {
	c := mustScript(t, `{"name": "json-script", "rules": [
	  {"when": {"purpose": "inception", "user": "(?P<w>hotel)"}, "respond": {"json": {"rein": true, "evidence": "{{.user.w}}"}}}
	], "default": {"respond": {"content": "no"}}}`)
	resp, err := c.Chat(context.Background(), Request{Purpose: PurposeInception, Messages: []Message{userMsg("book a hotel")}})
	if err != nil || resp.Content != `{"evidence":"hotel","rein":true}` {
		t.Fatalf("resp = %q, %v", resp.Content, err)
	}
}

// TestScriptedConcurrent runs many goroutines through New's wrapper (metrics
// cache, scripted rules) so -race checks the shared state.
func TestScriptedConcurrent(t *testing.T) {
	c, reg := newClient(t, Config{Script: "testdata/airline_demo.yaml"})
	const workers, calls = 8, 200
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < calls; i++ {
				purpose := []string{PurposeInception, PurposeAgent}[i%2]
				if _, err := c.Chat(context.Background(), Request{Purpose: purpose, Messages: []Message{userMsg("show reservation ABC123 or that one")}}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := metricValue(t, reg, telemetry.MModelRequests, map[string]string{"outcome": OutcomeOK}); got != workers*calls {
		t.Fatalf("ok requests = %v, want %d", got, workers*calls)
	}
}

// when.differ names two captured groups; anything else is refused when the
// script loads, not when a rule is tried.
func TestScriptDifferNamesTwoGroups(t *testing.T) {
	for _, differ := range []string{"[user.uid]", "[user.uid, owner]", "[user.uid, tool.owner]"} {
		src := "rules:\n  - when: {user: '(?P<uid>x)', differ: " + differ + "}\n    respond: {content: hi}\n"
		if _, err := ParseScript([]byte(src)); err == nil || !strings.Contains(err.Error(), "differ") {
			t.Errorf("differ %s: %v, want a load error naming differ", differ, err)
		}
	}
}
