package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// OpenAI speaks the chat-completions API through the official SDK. With a
// BaseURL it serves any compatible server (vLLM, Ollama, llama.cpp server,
// LiteLLM). It makes exactly one HTTP attempt per Chat: retries belong to
// the policy New wraps around it.
type OpenAI struct {
	client openai.Client
	model  string
	// compat is true for a custom BaseURL: send max_tokens (understood by
	// every compatible server) instead of max_completion_tokens.
	compat bool
}

// NewOpenAI builds the provider from cfg (Model, BaseURL, APIKey, Headers,
// HTTPClient). It does not validate cfg; New does.
func NewOpenAI(cfg Config) *OpenAI {
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" || cfg.BaseURL != "" {
		// An explicit empty key keeps the SDK from sending OPENAI_API_KEY
		// to a custom (possibly third-party) server.
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	for _, k := range sortedKeys(cfg.Headers) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	return &OpenAI{client: openai.NewClient(opts...), model: cfg.Model, compat: cfg.BaseURL != ""}
}

// Provider returns "openai".
func (c *OpenAI) Provider() string { return ProviderOpenAI }

// Model returns the configured model name.
func (c *OpenAI) Model() string { return c.model }

// Chat sends one chat-completions request.
func (c *OpenAI) Chat(ctx context.Context, req Request) (Response, error) {
	params, err := c.params(req)
	if err != nil {
		return Response{}, err
	}
	cc, err := c.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return Response{}, openAIError(err)
	}
	return openAIResponse(cc)
}

func (c *OpenAI) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.model)}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: argumentsText(tc.Arguments),
						},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, fmt.Errorf("%w: message %d has unknown role %q", ErrRejected, i, m.Role)
		}
	}
	for _, t := range req.Tools {
		params, err := schemaObject(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("%w: tool %s parameters: %w", ErrRejected, t.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(params)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	if rs := req.ResponseSchema; rs != nil {
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: rs.Name, Schema: rs.Schema}
		if rs.Strict {
			js.Strict = openai.Bool(true)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}
	if req.MaxTokens > 0 {
		if c.compat {
			p.MaxTokens = openai.Int(int64(req.MaxTokens))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	return p, nil
}

func openAIResponse(cc *openai.ChatCompletion) (Response, error) {
	if cc == nil || len(cc.Choices) == 0 {
		return Response{}, fmt.Errorf("%w: no choices", ErrEmptyResponse)
	}
	ch := cc.Choices[0]
	resp := Response{
		Content:    ch.Message.Content,
		Model:      cc.Model,
		StopReason: ch.FinishReason,
		Usage: Usage{
			InputTokens:       int(cc.Usage.PromptTokens),
			OutputTokens:      int(cc.Usage.CompletionTokens),
			CachedInputTokens: int(cc.Usage.PromptTokensDetails.CachedTokens),
		},
	}
	for _, tc := range ch.Message.ToolCalls {
		switch tc.Type {
		case "function", "":
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: argumentsJSON(tc.Function.Arguments)})
		case "custom":
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Custom.Name, Arguments: argumentsJSON(tc.Custom.Input)})
		}
	}
	if resp.Content == "" && len(resp.ToolCalls) == 0 && ch.Message.Refusal != "" {
		return resp, fmt.Errorf("%w: model refused: %s", ErrEmptyResponse, ch.Message.Refusal)
	}
	return resp, nil
}

// openAIError turns the SDK's HTTP error into an *APIError (keeping the
// original reachable for network and context errors).
func openAIError(err error) error {
	var e *openai.Error
	if !errors.As(err, &e) {
		return err
	}
	ae := &APIError{Provider: ProviderOpenAI, StatusCode: e.StatusCode, Type: e.Type, Message: e.Message}
	if e.Response != nil {
		ae.RetryAfter = parseRetryAfter(e.Response.Header, time.Now())
	}
	if ae.Message == "" {
		ae.Message = truncate(e.RawJSON(), 300)
	}
	return ae
}

// argumentsText renders tool-call arguments as the JSON text OpenAI expects.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

// argumentsJSON turns a model's argument text into JSON: valid JSON passes,
// empty becomes {}, anything else becomes a JSON string so the caller can
// report it to the model instead of failing to marshal.
func argumentsJSON(s string) json.RawMessage {
	switch {
	case s == "":
		return json.RawMessage("{}")
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	default:
		b, _ := json.Marshal(s)
		return b
	}
}

// schemaObject decodes a JSON Schema object; empty means {"type":"object"}.
func schemaObject(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
