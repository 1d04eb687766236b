package llm

import (
	"context"
	"encoding/json"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Purposes label what a call is for (bounded label values).
const (
	PurposeInception = "inception"
	PurposeAgent     = "agent"
	PurposeUser      = "user_simulator"
)

// Tool is a function the model may call, OpenAI-style.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ToolCall is one call the model asked for.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Message is one element of a chat.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"` // for RoleTool
	Name       string     `json:"name,omitempty"`         // tool name for RoleTool
}

// ResponseSchema asks for structured output matching a JSON Schema.
type ResponseSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	// Strict asks OpenAI-compatible servers for strict schema adherence
	// (`strict: true`); the schema must then list every property as required
	// and set additionalProperties false. Ignored by the other providers.
	Strict bool `json:"strict,omitempty"`
}

// Request is one chat call. System is the static, cacheable prefix; providers
// that support prompt caching mark it so.
type Request struct {
	Purpose        string          `json:"purpose"`
	System         string          `json:"system"`
	Messages       []Message       `json:"messages"`
	Tools          []Tool          `json:"tools,omitempty"`
	ResponseSchema *ResponseSchema `json:"response_schema,omitempty"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
}

// Usage counts tokens of one call.
type Usage struct {
	InputTokens       int `json:"input_tokens"`
	OutputTokens      int `json:"output_tokens"`
	CachedInputTokens int `json:"cached_input_tokens"`
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Response is the model's answer: text, tool calls, or both.
type Response struct {
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	Usage      Usage      `json:"usage"`
	Model      string     `json:"model"`
	StopReason string     `json:"stop_reason,omitempty"`
}

// Client is a model provider. Implementations are safe for concurrent use;
// the per-call deadline comes from ctx.
type Client interface {
	Chat(ctx context.Context, req Request) (Response, error)
	Provider() string
	Model() string
}
