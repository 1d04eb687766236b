package run

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reinception/rein/internal/llm"
)

// A worked example of the estimate: 4 + 12 + 8 + 9 = 33 input characters
// → 9 tokens; 5 + 9 + 2 = 16 output characters → 4 tokens.
func TestEstimateUsage(t *testing.T) {
	req := llm.Request{System: "abcd", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello world!"}},
		Tools:          []llm.Tool{{Name: "look", Description: "up", Parameters: json.RawMessage(`{}`)}}, // 4+2+2
		ResponseSchema: &llm.ResponseSchema{Name: "x", Schema: json.RawMessage(`{"a":"b"}`)}}
	resp := llm.Response{Content: "héllo", ToolCalls: []llm.ToolCall{{Name: "get_thing", Arguments: json.RawMessage(`{}`)}}}
	if u := EstimateUsage(req, resp); u.InputTokens != 9 || u.OutputTokens != 4 {
		t.Errorf("estimate %+v, want 9 in, 4 out", u)
	}
}

type fixedClient struct{ resp llm.Response }

func (f fixedClient) Chat(context.Context, llm.Request) (llm.Response, error) { return f.resp, nil }
func (fixedClient) Provider() string                                          { return "test" }
func (fixedClient) Model() string                                             { return "fixed" }

// Reported usage is kept; only a response without usage is estimated.
func TestEstimatingFillsOnlyMissingUsage(t *testing.T) {
	req := llm.Request{System: "12345678"}
	got, _ := Estimating(fixedClient{llm.Response{Content: "abcd", Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}}).Chat(context.Background(), req)
	if got.Usage.Total() != 15 {
		t.Errorf("reported usage changed: %+v", got.Usage)
	}
	got, _ = Estimating(fixedClient{llm.Response{Content: "abcd"}}).Chat(context.Background(), req)
	if got.Usage.InputTokens != 2 || got.Usage.OutputTokens != 1 {
		t.Errorf("estimate %+v, want 2 in, 1 out", got.Usage)
	}
}
