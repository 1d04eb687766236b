package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/internal/telemetry"
)

const openAIToolCallBody = `{
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test-2026",
  "choices": [{"index": 0, "finish_reason": "tool_calls",
    "message": {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_9", "type": "function", "function": {"name": "get_reservation_details", "arguments": "{\"reservation_id\": \"ZFA04Y\"}"}},
      {"id": "call_10", "type": "function", "function": {"name": "think", "arguments": "not json"}}
    ]}}],
  "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230, "prompt_tokens_details": {"cached_tokens": 1024}}
}`

const openAIStructuredBody = `{
  "id": "chatcmpl-2", "object": "chat.completion", "created": 1, "model": "gpt-test-2026",
  "choices": [{"index": 0, "finish_reason": "stop",
    "message": {"role": "assistant", "content": "{\"rein\": true, \"error_type\": \"anaphora\"}"}}],
  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
}`

func openAIConfig(baseURL string) Config {
	return fastRetries(Config{Provider: ProviderOpenAI, Model: "gpt-test", BaseURL: baseURL + "/v1", APIKey: "sk-test",
		Headers: map[string]string{"X-Gateway-Key": "gw-1"}})
}

func TestOpenAIToolCallsWire(t *testing.T) {
	srv := newFakeServer(t, reply{body: openAIToolCallBody})
	c, reg := newClient(t, openAIConfig(srv.srv.URL))
	temp := 0.0
	req := Request{
		Purpose:   PurposeAgent,
		System:    "You are an airline agent.",
		MaxTokens: 256, Temperature: &temp,
		Messages: []Message{
			userMsg("cancel reservation ZFA04Y"),
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_1", Name: "think", Arguments: json.RawMessage(`{"thought":"check first"}`)}}},
			{Role: RoleTool, ToolCallID: "call_1", Name: "think", Content: ""},
		},
		Tools: []Tool{{Name: "get_reservation_details", Description: "Get a reservation.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"reservation_id":{"type":"string"}},"required":["reservation_id"]}`)}},
	}
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// What went out.
	seen := srv.requests()
	if len(seen) != 1 {
		t.Fatalf("%d requests", len(seen))
	}
	got := seen[0]
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"path", got.Path, "/v1/chat/completions"},
		{"auth", got.Header.Get("Authorization"), "Bearer sk-test"},
		{"extra header", got.Header.Get("X-Gateway-Key"), "gw-1"},
		{"model", dig(got.Body, "model"), "gpt-test"},
		{"compat max_tokens", dig(got.Body, "max_tokens"), 256.0},
		{"temperature", dig(got.Body, "temperature"), 0.0},
		{"system first", dig(got.Body, "messages", 0, "role"), "system"},
		{"system text", dig(got.Body, "messages", 0, "content"), "You are an airline agent."},
		{"user", dig(got.Body, "messages", 1, "content"), "cancel reservation ZFA04Y"},
		{"assistant tool call id", dig(got.Body, "messages", 2, "tool_calls", 0, "id"), "call_1"},
		{"assistant tool call args", dig(got.Body, "messages", 2, "tool_calls", 0, "function", "arguments"), `{"thought":"check first"}`},
		{"tool result role", dig(got.Body, "messages", 3, "role"), "tool"},
		{"tool result id", dig(got.Body, "messages", 3, "tool_call_id"), "call_1"},
		{"tool type", dig(got.Body, "tools", 0, "type"), "function"},
		{"tool name", dig(got.Body, "tools", 0, "function", "name"), "get_reservation_details"},
		{"tool schema", dig(got.Body, "tools", 0, "function", "parameters", "required", 0), "reservation_id"},
		{"no response_format", dig(got.Body, "response_format"), nil},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	if _, ok := got.Body["max_completion_tokens"]; ok {
		t.Error("compatible server got max_completion_tokens")
	}
	// What came back.
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "call_9" || resp.ToolCalls[0].Name != "get_reservation_details" ||
		string(resp.ToolCalls[0].Arguments) != `{"reservation_id": "ZFA04Y"}` {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
	if string(resp.ToolCalls[1].Arguments) != `"not json"` {
		t.Errorf("invalid arguments should become a JSON string, got %s", resp.ToolCalls[1].Arguments)
	}
	if resp.Usage != (Usage{InputTokens: 1200, OutputTokens: 30, CachedInputTokens: 1024}) || resp.Model != "gpt-test-2026" || resp.StopReason != "tool_calls" {
		t.Fatalf("resp = %+v", resp)
	}
	for kind, want := range map[string]float64{TokenInput: 1200, TokenOutput: 30, TokenCachedInput: 1024} {
		if v := metricValue(t, reg, telemetry.MModelTokens, map[string]string{"provider": "openai", "model": "gpt-test", "purpose": "agent", "kind": kind}); v != want {
			t.Errorf("tokens{%s} = %v, want %v", kind, v, want)
		}
	}
}

func TestOpenAIStructuredOutput(t *testing.T) {
	srv := newFakeServer(t, reply{body: openAIStructuredBody})
	cfg := openAIConfig(srv.srv.URL)
	c, _ := newClient(t, cfg)
	schema := json.RawMessage(`{"type":"object","properties":{"rein":{"type":"boolean"}},"required":["rein"],"additionalProperties":false}`)
	resp, err := c.Chat(context.Background(), Request{Purpose: PurposeInception, Messages: []Message{userMsg("that one")},
		ResponseSchema: &ResponseSchema{Name: "inception", Schema: schema, Strict: true}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != `{"rein": true, "error_type": "anaphora"}` {
		t.Fatalf("content = %q", resp.Content)
	}
	body := srv.requests()[0].Body
	for _, ch := range []struct {
		path []any
		want any
	}{
		{[]any{"response_format", "type"}, "json_schema"},
		{[]any{"response_format", "json_schema", "name"}, "inception"},
		{[]any{"response_format", "json_schema", "strict"}, true},
		{[]any{"response_format", "json_schema", "schema", "required", 0}, "rein"},
		{[]any{"response_format", "json_schema", "schema", "additionalProperties"}, false},
	} {
		if got := dig(body, ch.path...); got != ch.want {
			t.Errorf("%v = %#v, want %#v", ch.path, got, ch.want)
		}
	}
}

func TestOpenAIOfficialEndpointUsesMaxCompletionTokens(t *testing.T) {
	srv := newFakeServer(t, reply{body: openAIStructuredBody})
	// An HTTPClient that sends the official-API request to the local server.
	o := NewOpenAI(Config{Model: "gpt-test", APIKey: "k", HTTPClient: &http.Client{Transport: rewriteTo(srv.srv.URL)}})
	if _, err := o.Chat(context.Background(), Request{MaxTokens: 64, Messages: []Message{userMsg("hi")}}); err != nil {
		t.Fatal(err)
	}
	body := srv.requests()[0].Body
	if dig(body, "max_completion_tokens") != 64.0 || dig(body, "max_tokens") != nil {
		t.Fatalf("body = %v", body)
	}
}

// rewriteTo sends every request to base, keeping the path.
type rewriteTo string

func (r rewriteTo) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	target := strings.TrimPrefix(string(r), "http://")
	req.URL.Scheme, req.URL.Host, req.Host = "http", target, target
	return http.DefaultTransport.RoundTrip(req)
}

func TestOpenAIRetries(t *testing.T) {
	rateLimited := reply{status: 429, headers: map[string]string{"Retry-After": "1"},
		body: `{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}`}
	serverErr := reply{status: 500, body: `{"error": {"message": "boom", "type": "server_error"}}`}
	ok := reply{body: openAIStructuredBody}
	tests := []struct {
		name       string
		replies    []reply
		maxRetries int
		wantErr    error
		wantCalls  int
		minElapsed time.Duration
		outcomes   map[string]float64
	}{
		{name: "429 with Retry-After then success", replies: []reply{rateLimited, ok}, wantCalls: 2, minElapsed: time.Second,
			outcomes: map[string]float64{OutcomeRateLimited: 1, OutcomeOK: 1}},
		{name: "500s then success", replies: []reply{serverErr, serverErr, ok}, wantCalls: 3,
			outcomes: map[string]float64{OutcomeError: 2, OutcomeOK: 1}},
		{name: "500s past the retry budget", replies: []reply{serverErr}, maxRetries: 2, wantCalls: 3, wantErr: ErrServer,
			outcomes: map[string]float64{OutcomeError: 3}},
		{name: "400 is not retried", replies: []reply{{status: 400, body: `{"error": {"message": "bad schema", "type": "invalid_request_error"}}`}},
			wantCalls: 1, wantErr: ErrRejected, outcomes: map[string]float64{OutcomeError: 1}},
		{name: "retries disabled", replies: []reply{serverErr, ok}, maxRetries: -1, wantCalls: 1, wantErr: ErrServer,
			outcomes: map[string]float64{OutcomeError: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, tt.replies...)
			cfg := openAIConfig(srv.srv.URL)
			cfg.MaxRetries = tt.maxRetries
			c, reg := newClient(t, cfg)
			start := time.Now()
			_, err := c.Chat(context.Background(), Request{Purpose: PurposeInception, Messages: []Message{userMsg("hi")}})
			if tt.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if n := len(srv.requests()); n != tt.wantCalls {
				t.Fatalf("server saw %d requests, want %d", n, tt.wantCalls)
			}
			if d := time.Since(start); d < tt.minElapsed {
				t.Fatalf("returned after %s, Retry-After asked for %s", d, tt.minElapsed)
			}
			for outcome, want := range tt.outcomes {
				lbl := map[string]string{"provider": "openai", "model": "gpt-test", "purpose": "inception", "outcome": outcome}
				if got := metricValue(t, reg, telemetry.MModelRequests, lbl); got != want {
					t.Errorf("requests{%s} = %v, want %v", outcome, got, want)
				}
			}
			if got := metricValue(t, reg, telemetry.MModelRequestSeconds, map[string]string{"provider": "openai", "purpose": "inception"}); got != float64(tt.wantCalls) {
				t.Errorf("histogram count = %v, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestOpenAIErrorBody(t *testing.T) {
	srv := newFakeServer(t, reply{status: 401, body: `{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}`})
	c, _ := newClient(t, openAIConfig(srv.srv.URL))
	_, err := c.Chat(context.Background(), Request{Messages: []Message{userMsg("hi")}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Message != "Incorrect API key provided" || ae.Type != "invalid_request_error" {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), "Incorrect API key provided") {
		t.Fatalf("message lost: %v", err)
	}
}

func TestOpenAITimeouts(t *testing.T) {
	t.Run("caller deadline", func(t *testing.T) {
		srv := newFakeServer(t, reply{hang: true})
		c, reg := newClient(t, openAIConfig(srv.srv.URL))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.Chat(ctx, Request{Purpose: PurposeInception, Messages: []Message{userMsg("hi")}})
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
		}
		if n := len(srv.requests()); n != 1 {
			t.Fatalf("%d attempts after the caller's deadline, want 1", n)
		}
		expected := `
# HELP rein_model_requests_total Model provider HTTP attempts (each retry counts), by outcome: ok, error, timeout, rate_limited.
# TYPE rein_model_requests_total counter
rein_model_requests_total{model="gpt-test",outcome="error",provider="openai",purpose="inception"} 0
rein_model_requests_total{model="gpt-test",outcome="ok",provider="openai",purpose="inception"} 0
rein_model_requests_total{model="gpt-test",outcome="rate_limited",provider="openai",purpose="inception"} 0
rein_model_requests_total{model="gpt-test",outcome="timeout",provider="openai",purpose="inception"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), telemetry.MModelRequests); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("per-attempt timeout is retried", func(t *testing.T) {
		srv := newFakeServer(t, reply{hang: true}, reply{body: openAIStructuredBody})
		cfg := openAIConfig(srv.srv.URL)
		cfg.Timeout = 50 * time.Millisecond
		c, reg := newClient(t, cfg)
		resp, err := c.Chat(context.Background(), Request{Purpose: PurposeAgent, Messages: []Message{userMsg("hi")}})
		if err != nil || resp.Content == "" {
			t.Fatalf("resp = %+v, err = %v", resp, err)
		}
		for outcome, want := range map[string]float64{OutcomeTimeout: 1, OutcomeOK: 1} {
			if got := metricValue(t, reg, telemetry.MModelRequests, map[string]string{"purpose": "agent", "outcome": outcome}); got != want {
				t.Errorf("requests{%s} = %v, want %v", outcome, got, want)
			}
		}
	})
	t.Run("Retry-After past the deadline fails fast", func(t *testing.T) {
		srv := newFakeServer(t, reply{status: 429, headers: map[string]string{"Retry-After": "30"}, body: `{"error": {"message": "slow down"}}`})
		c, _ := newClient(t, openAIConfig(srv.srv.URL))
		// The deadline is before the Retry-After: the call gives up at
		// once rather than wait into it, so the deadline never fires.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := c.Chat(ctx, Request{Messages: []Message{userMsg("hi")}})
		if !errors.Is(err, ErrRateLimited) || ctx.Err() != nil {
			t.Fatalf("err = %v (context: %v), want ErrRateLimited before the deadline", err, ctx.Err())
		}
	})
}

func TestOpenAIEmptyChoices(t *testing.T) {
	srv := newFakeServer(t, reply{body: `{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}`})
	c, _ := newClient(t, openAIConfig(srv.srv.URL))
	if _, err := c.Chat(context.Background(), Request{Messages: []Message{userMsg("hi")}}); !errors.Is(err, ErrEmptyResponse) {
		t.Fatalf("err = %v", err)
	}
}
