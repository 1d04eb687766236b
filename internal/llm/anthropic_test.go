package llm

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/reinception/rein/internal/telemetry"
)

const anthropicToolUseBody = `{
  "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-2026",
  "content": [
    {"type": "text", "text": "Let me look that up."},
    {"type": "tool_use", "id": "toolu_1", "name": "get_reservation_details", "input": {"reservation_id": "ZFA04Y"}}
  ],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 20, "output_tokens": 15, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 0}
}`

const anthropicStructuredBody = `{
  "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-test-2026",
  "content": [{"type": "tool_use", "id": "toolu_2", "name": "inception", "input": {"rein": true, "error_type": "anaphora"}}],
  "stop_reason": "tool_use", "stop_sequence": null,
  "usage": {"input_tokens": 30, "output_tokens": 12, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 1500}
}`

func anthropicConfig(baseURL string) Config {
	return fastRetries(Config{Provider: ProviderAnthropic, Model: "claude-test", BaseURL: baseURL, APIKey: "ak-test",
		Headers: map[string]string{"X-Gateway-Key": "gw-2"}})
}

func TestAnthropicToolUseWire(t *testing.T) {
	srv := newFakeServer(t, reply{body: anthropicToolUseBody})
	c, reg := newClient(t, anthropicConfig(srv.srv.URL))
	temp := 0.2
	req := Request{
		Purpose:     PurposeAgent,
		System:      "You are an airline agent. Static policy text.",
		Temperature: &temp,
		Messages: []Message{
			userMsg("cancel reservation ZFA04Y"),
			{Role: RoleAssistant, Content: "Checking.", ToolCalls: []ToolCall{
				{ID: "toolu_a", Name: "think", Arguments: json.RawMessage(`{"thought":"look it up"}`)},
				{ID: "toolu_b", Name: "get_user_details", Arguments: json.RawMessage(`{"user_id":"u1"}`)},
			}},
			{Role: RoleTool, ToolCallID: "toolu_a", Name: "think", Content: ""},
			{Role: RoleTool, ToolCallID: "toolu_b", Name: "get_user_details", Content: `{"name":"Ana"}`},
		},
		Tools: []Tool{{Name: "get_reservation_details", Description: "Get a reservation.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"reservation_id":{"type":"string"}},"required":["reservation_id"],"additionalProperties":false}`)}},
	}
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := srv.requests()[0]
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"path", got.Path, "/v1/messages"},
		// This SDK version sends the key as a bearer token; older ones used x-api-key.
		{"api key", got.Header.Get("X-Api-Key") == "ak-test" || got.Header.Get("Authorization") == "Bearer ak-test", true},
		{"extra header", got.Header.Get("X-Gateway-Key"), "gw-2"},
		{"version header set", got.Header.Get("Anthropic-Version") != "", true},
		{"model", dig(got.Body, "model"), "claude-test"},
		{"default max_tokens", dig(got.Body, "max_tokens"), float64(DefaultAnthropicMaxTokens)},
		{"temperature", dig(got.Body, "temperature"), 0.2},
		{"system text", dig(got.Body, "system", 0, "text"), "You are an airline agent. Static policy text."},
		{"system cached", dig(got.Body, "system", 0, "cache_control", "type"), "ephemeral"},
		{"user", dig(got.Body, "messages", 0, "content", 0, "text"), "cancel reservation ZFA04Y"},
		{"assistant text", dig(got.Body, "messages", 1, "content", 0, "text"), "Checking."},
		{"assistant tool_use", dig(got.Body, "messages", 1, "content", 1, "type"), "tool_use"},
		{"tool_use input", dig(got.Body, "messages", 1, "content", 2, "input", "user_id"), "u1"},
		{"results merged into one user turn", len(dig(got.Body, "messages").([]any)), 3},
		{"result role", dig(got.Body, "messages", 2, "role"), "user"},
		{"result 1", dig(got.Body, "messages", 2, "content", 0, "tool_use_id"), "toolu_a"},
		{"empty result has no content", dig(got.Body, "messages", 2, "content", 0, "content"), nil},
		{"result 2", dig(got.Body, "messages", 2, "content", 1, "tool_use_id"), "toolu_b"},
		{"result 2 text", dig(got.Body, "messages", 2, "content", 1, "content", 0, "text"), `{"name":"Ana"}`},
		{"tool name", dig(got.Body, "tools", 0, "name"), "get_reservation_details"},
		{"tool schema type", dig(got.Body, "tools", 0, "input_schema", "type"), "object"},
		{"tool schema required", dig(got.Body, "tools", 0, "input_schema", "required", 0), "reservation_id"},
		{"tool schema extra keyword kept", dig(got.Body, "tools", 0, "input_schema", "additionalProperties"), false},
		{"no forced tool", dig(got.Body, "tool_choice"), nil},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	if resp.Content != "Let me look that up." || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "toolu_1" ||
		string(resp.ToolCalls[0].Arguments) != `{"reservation_id": "ZFA04Y"}` || resp.StopReason != "tool_use" || resp.Model != "claude-test-2026" {
		t.Fatalf("resp = %+v", resp)
	}
	if resp.Usage != (Usage{InputTokens: 1820, OutputTokens: 15, CachedInputTokens: 1800}) {
		t.Fatalf("usage = %+v", resp.Usage)
	}
	if v := metricValue(t, reg, telemetry.MModelTokens, map[string]string{"provider": "anthropic", "kind": TokenCachedInput}); v != 1800 {
		t.Fatalf("cached tokens metric = %v", v)
	}
}

func TestAnthropicStructuredOutputIsForcedTool(t *testing.T) {
	srv := newFakeServer(t, reply{body: anthropicStructuredBody})
	c, _ := newClient(t, anthropicConfig(srv.srv.URL))
	schema := json.RawMessage(`{"type":"object","properties":{"rein":{"type":"boolean"},"error_type":{"type":["string","null"]}},"required":["rein"]}`)
	resp, err := c.Chat(context.Background(), Request{Purpose: PurposeInception, System: "static", Messages: []Message{userMsg("that one")},
		ResponseSchema: &ResponseSchema{Name: "inception", Schema: schema}, MaxTokens: 300})
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(resp.Content), &v); err != nil || v["rein"] != true || v["error_type"] != "anaphora" {
		t.Fatalf("content = %q (%v)", resp.Content, err)
	}
	if len(resp.ToolCalls) != 0 {
		t.Fatalf("the schema tool leaked into tool calls: %+v", resp.ToolCalls)
	}
	if resp.Usage != (Usage{InputTokens: 1530, OutputTokens: 12}) {
		t.Fatalf("usage = %+v", resp.Usage)
	}
	body := srv.requests()[0].Body
	for _, ch := range []struct {
		path []any
		want any
	}{
		{[]any{"tool_choice", "type"}, "tool"},
		{[]any{"tool_choice", "name"}, "inception"},
		{[]any{"tools", 0, "name"}, "inception"},
		{[]any{"tools", 0, "input_schema", "properties", "rein", "type"}, "boolean"},
		{[]any{"max_tokens"}, 300.0},
	} {
		if got := dig(body, ch.path...); got != ch.want {
			t.Errorf("%v = %#v, want %#v", ch.path, got, ch.want)
		}
	}
}

func TestAnthropicStructuredOutputMissingTool(t *testing.T) {
	srv := newFakeServer(t, reply{body: `{"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [{"type": "text", "text": "I refuse"}],
		"stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}`})
	c, _ := newClient(t, anthropicConfig(srv.srv.URL))
	_, err := c.Chat(context.Background(), Request{Messages: []Message{userMsg("x")}, ResponseSchema: &ResponseSchema{Name: "inception", Schema: json.RawMessage(`{"type":"object"}`)}})
	if !errors.Is(err, ErrEmptyResponse) {
		t.Fatalf("err = %v", err)
	}
}

func TestAnthropicErrorsAndRetries(t *testing.T) {
	overloaded := reply{status: 529, body: `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`}
	limited := reply{status: 429, headers: map[string]string{"Retry-After": "0", "Retry-After-Ms": "20"},
		body: `{"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your rate limit"}}`}
	ok := reply{body: anthropicToolUseBody}
	tests := []struct {
		name      string
		replies   []reply
		wantErr   error
		wantType  string
		wantCalls int
		outcomes  map[string]float64
	}{
		{"529 overloaded then success", []reply{overloaded, ok}, nil, "", 2, map[string]float64{OutcomeError: 1, OutcomeOK: 1}},
		{"429 Retry-After-Ms then success", []reply{limited, ok}, nil, "", 2, map[string]float64{OutcomeRateLimited: 1, OutcomeOK: 1}},
		{"429 forever", []reply{limited}, ErrRateLimited, "rate_limit_error", 4, map[string]float64{OutcomeRateLimited: 4}},
		{"400 invalid request", []reply{{status: 400, body: `{"type": "error", "error": {"type": "invalid_request_error", "message": "messages: roles must alternate"}}`}},
			ErrRejected, "invalid_request_error", 1, map[string]float64{OutcomeError: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.replies...)
			c, reg := newClient(t, anthropicConfig(srv.srv.URL))
			_, err := c.Chat(context.Background(), Request{Purpose: PurposeAgent, Messages: []Message{userMsg("hi")}})
			if tt.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != nil {
				var ae *APIError
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &ae) || ae.Type != tt.wantType || ae.Message == "" {
					t.Fatalf("err = %v (%#v), want %v of type %s", err, ae, tt.wantErr, tt.wantType)
				}
			}
			if n := len(srv.requests()); n != tt.wantCalls {
				t.Fatalf("%d requests, want %d", n, tt.wantCalls)
			}
			for outcome, want := range tt.outcomes {
				if got := metricValue(t, reg, telemetry.MModelRequests, map[string]string{"provider": "anthropic", "outcome": outcome}); got != want {
					t.Errorf("requests{%s} = %v, want %v", outcome, got, want)
				}
			}
		})
	}
}
