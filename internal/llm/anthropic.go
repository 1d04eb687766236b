package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// DefaultAnthropicMaxTokens is sent when Request.MaxTokens is zero (the
// Messages API requires max_tokens).
const DefaultAnthropicMaxTokens = 4096

// Anthropic speaks the Messages API through the official SDK. Request.System
// goes out as one system block marked cache_control ephemeral, so the static
// prefix (tools + system) is cached across calls. Structured output is a
// forced call of a tool named after ResponseSchema.Name whose input_schema is
// the schema; its input comes back as Response.Content (JSON text), so
// callers treat both providers alike. One HTTP attempt per Chat.
type Anthropic struct {
	client anthropic.Client
	model  string
}

// NewAnthropic builds the provider from cfg (Model, BaseURL, APIKey,
// Headers, HTTPClient). The SDK's environment defaults (ANTHROPIC_* variables,
// profiles) are not consulted: Config is the one source.
func NewAnthropic(cfg Config) *Anthropic {
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	for _, k := range sortedKeys(cfg.Headers) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	return &Anthropic{client: anthropic.NewClient(opts...), model: cfg.Model}
}

// Provider returns "anthropic".
func (c *Anthropic) Provider() string { return ProviderAnthropic }

// Model returns the configured model name.
func (c *Anthropic) Model() string { return c.model }

// Chat sends one Messages API request.
func (c *Anthropic) Chat(ctx context.Context, req Request) (Response, error) {
	params, err := c.params(req)
	if err != nil {
		return Response{}, err
	}
	var opts []option.RequestOption
	if req.Temperature != nil {
		opts = append(opts, option.WithJSONSet("temperature", *req.Temperature))
	}
	msg, err := c.client.Messages.New(ctx, params, opts...)
	if err != nil {
		return Response{}, anthropicError(err)
	}
	return anthropicResponse(msg, req.ResponseSchema)
}

func (c *Anthropic) params(req Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(c.model), MaxTokens: DefaultAnthropicMaxTokens}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		p.System = append(p.System, anthropic.TextBlockParam{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()})
	}
	// The Messages API wants user/assistant alternation with tool results in
	// user turns: merge consecutive user-side messages into one.
	var cur *anthropic.MessageParam
	push := func(role string, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if cur != nil && ((role == RoleUser && cur.OfUser != nil) || (role == RoleAssistant && cur.OfAssistant != nil)) {
			if cur.OfUser != nil {
				cur.OfUser.Content = append(cur.OfUser.Content, blocks...)
			} else {
				cur.OfAssistant.Content = append(cur.OfAssistant.Content, blocks...)
			}
			return
		}
		var m anthropic.MessageParam
		if role == RoleUser {
			m = anthropic.NewUserMessage(blocks...)
		} else {
			m = anthropic.NewAssistantMessage(blocks...)
		}
		p.Messages = append(p.Messages, m)
		cur = &p.Messages[len(p.Messages)-1]
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			if m.Content != "" {
				p.System = append(p.System, anthropic.TextBlockParam{Text: m.Content})
			}
		case RoleUser:
			if m.Content != "" {
				push(RoleUser, anthropic.NewTextBlock(m.Content))
			}
		case RoleTool:
			if m.Content == "" {
				// e.g. the planted think step's empty result: an empty text
				// block would be refused, so send the result without content.
				push(RoleUser, anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}})
			} else {
				push(RoleUser, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, false))
			}
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, json.RawMessage(argumentsText(tc.Arguments)), tc.Name))
			}
			push(RoleAssistant, blocks...)
		default:
			return p, fmt.Errorf("%w: message %d has unknown role %q", ErrRejected, i, m.Role)
		}
		// p.Messages may have been reallocated: re-point cur at the last element.
		if n := len(p.Messages); n > 0 {
			cur = &p.Messages[n-1]
		}
	}
	for _, t := range req.Tools {
		tp, err := anthropicTool(t.Name, t.Description, t.Parameters)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
	}
	if rs := req.ResponseSchema; rs != nil {
		tp, err := anthropicTool(rs.Name, "Return the answer as this tool's input.", rs.Schema)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: rs.Name}}
	}
	return p, nil
}

// anthropicTool maps a JSON Schema object onto the SDK's input_schema
// (properties and required as fields, every other keyword kept verbatim).
func anthropicTool(name, desc string, schema json.RawMessage) (*anthropic.ToolParam, error) {
	obj, err := schemaObject(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: tool %s schema: %w", ErrRejected, name, err)
	}
	in := anthropic.ToolInputSchemaParam{Properties: obj["properties"]}
	if req, ok := obj["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range obj {
		switch k {
		case "type", "properties", "required":
		default:
			if in.ExtraFields == nil {
				in.ExtraFields = map[string]any{}
			}
			in.ExtraFields[k] = v
		}
	}
	tp := &anthropic.ToolParam{Name: name, InputSchema: in}
	if desc != "" {
		tp.Description = anthropic.String(desc)
	}
	return tp, nil
}

func anthropicResponse(msg *anthropic.Message, rs *ResponseSchema) (Response, error) {
	if msg == nil {
		return Response{}, fmt.Errorf("%w: no message", ErrEmptyResponse)
	}
	u := msg.Usage
	resp := Response{
		Model:      string(msg.Model),
		StopReason: string(msg.StopReason),
		Usage: Usage{
			// Anthropic counts cache reads and writes apart from input_tokens;
			// Usage.InputTokens is the whole prompt, as OpenAI reports it.
			InputTokens:       int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
			OutputTokens:      int(u.OutputTokens),
			CachedInputTokens: int(u.CacheReadInputTokens),
		},
	}
	var text strings.Builder
	structured := false
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := json.RawMessage(b.Input)
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			if rs != nil && b.Name == rs.Name && !structured {
				resp.Content = string(args)
				structured = true
				continue
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	if !structured {
		resp.Content = text.String()
	}
	if rs != nil && !structured {
		return resp, fmt.Errorf("%w: no %s tool call in the answer (stop_reason %s)", ErrEmptyResponse, rs.Name, resp.StopReason)
	}
	return resp, nil
}

func anthropicError(err error) error {
	var e *anthropic.Error
	if !errors.As(err, &e) {
		return err
	}
	ae := &APIError{Provider: ProviderAnthropic, StatusCode: e.StatusCode, Type: string(e.Type()), Message: e.Message}
	if e.Response != nil {
		ae.RetryAfter = parseRetryAfter(e.Response.Header, time.Now())
	}
	if ae.Message == "" {
		ae.Message = truncate(e.RawJSON(), 300)
	}
	return ae
}
