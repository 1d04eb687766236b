package run

import (
	"context"
	"strings"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/llm"
)

// Turn 1 of an error scenario is answered with the recorded mishandling,
// without a model call; later turns and unknown conversations go to the
// model.
func TestOpeningClientAnswersTheErrorTurn(t *testing.T) {
	s := bundled(t, "air-ana-1")
	tp, _ := registered(t, s.Opening.ErrorTurn, s, taubench.Task{})
	inner := &fakeClient{fn: func(llm.Request) llm.Response { return llm.Response{Content: "model"} }}
	c := openingClient{Client: inner, tap: tp}
	ctx := context.Background()
	resp, _ := c.Chat(ctx, llm.Request{Messages: []llm.Message{user(s.Opening.ErrorTurn)}})
	if resp.Content != s.Opening.Mishandling || inner.calls() != 0 {
		t.Errorf("turn 1: %q, %d model calls", resp.Content, inner.calls())
	}
	resp, _ = c.Chat(ctx, llm.Request{Messages: []llm.Message{user(s.Opening.ErrorTurn), {Role: llm.RoleAssistant, Content: "x"}, user(s.Opening.FollowUp)}})
	if resp.Content != "model" {
		t.Errorf("turn 2: %q", resp.Content)
	}
	if resp, _ = c.Chat(ctx, llm.Request{Messages: []llm.Message{user("someone else")}}); resp.Content != "model" {
		t.Errorf("unknown conversation: %q", resp.Content)
	}
}

// Self-refine checks a drafted text reply once per user turn: the check
// request carries the draft and the taxonomy; a second reply of the same
// turn passes unchecked.
func TestRefineClientChecksOncePerTurn(t *testing.T) {
	s := bundled(t, "air-clean-1")
	tp, _ := registered(t, "hello", s, taubench.Task{})
	inner := &fakeClient{fn: func(req llm.Request) llm.Response {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(last.Content, "check it") {
			return llm.Response{Content: "refined", Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}
		}
		return llm.Response{Content: "draft", Usage: llm.Usage{InputTokens: 5, OutputTokens: 1}}
	}}
	c := refineClient{Client: inner, tap: tp, prompt: selfRefinePrompt(defaultTaxonomy(t))}
	req := llm.Request{Messages: []llm.Message{user("hello")}}
	resp, _ := c.Chat(context.Background(), req)
	if resp.Content != "refined" || resp.Usage.Total() != 18 || inner.calls() != 2 {
		t.Fatalf("first reply: %+v after %d calls", resp, inner.calls())
	}
	check := inner.reqs[1].Messages
	if check[1].Role != llm.RoleAssistant || check[1].Content != "draft" || !strings.Contains(check[2].Content, "ambiguity_report") {
		t.Errorf("check request: %+v", check)
	}
	if resp, _ = c.Chat(context.Background(), req); resp.Content != "draft" || inner.calls() != 3 {
		t.Errorf("second reply of the turn: %q after %d calls", resp.Content, inner.calls())
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: "draft"}, user("next"))
	if resp, _ = c.Chat(context.Background(), req); resp.Content != "refined" {
		t.Errorf("next turn: %q", resp.Content)
	}
}

// The meter adds each conversation's tokens and model time by user turn.
func TestMeterClientCountsPerConversation(t *testing.T) {
	s := bundled(t, "air-clean-1")
	tp, cv := registered(t, "hello", s, taubench.Task{})
	inner := &fakeClient{fn: func(llm.Request) llm.Response {
		return llm.Response{Content: "ok", Usage: llm.Usage{InputTokens: 7, OutputTokens: 3}}
	}}
	c := meterClient{Client: inner, tap: tp}
	for range 2 {
		_, _ = c.Chat(context.Background(), llm.Request{Messages: []llm.Message{user("hello")}})
	}
	_, _ = c.Chat(context.Background(), llm.Request{Messages: []llm.Message{user("unrelated")}})
	if cv.agentTokens != 20 || len(cv.agentTime) != 1 {
		t.Errorf("tokens %d, turns timed %v", cv.agentTokens, cv.agentTime)
	}
}

// A drafted tool call is checked too (the code before passed it
// unchecked): the check describes the calls, since a call without its
// result is no valid message, and the second answer is what the loop gets.
func TestRefineClientChecksAToolCallDraft(t *testing.T) {
	s := bundled(t, "air-clean-1")
	tp, _ := registered(t, "hello", s, taubench.Task{})
	inner := &fakeClient{fn: func(req llm.Request) llm.Response {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(last.Content, "check it") {
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c2", Name: "transfer_to_human_agents", Arguments: []byte(`{"summary":"s"}`)}}}
		}
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "cancel_reservation", Arguments: []byte(`{"reservation_id":"ABC123"}`)}}}
	}}
	c := refineClient{Client: inner, tap: tp, prompt: selfRefinePrompt(defaultTaxonomy(t))}
	resp, err := c.Chat(context.Background(), llm.Request{Messages: []llm.Message{user("hello")}})
	if err != nil || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "transfer_to_human_agents" || inner.calls() != 2 {
		t.Fatalf("reply %+v, %v after %d calls", resp, err, inner.calls())
	}
	check := inner.reqs[1].Messages
	if len(check) != 2 || check[1].Role != llm.RoleUser || !strings.Contains(check[1].Content, `cancel_reservation {"reservation_id":"ABC123"}`) {
		t.Errorf("check request: %+v", check)
	}
}

// The agent's calls carry the run's temperature unless the caller set one.
func TestTemperatureClientSetsTheRunsTemperature(t *testing.T) {
	inner := &fakeClient{fn: func(llm.Request) llm.Response { return llm.Response{Content: "ok"} }}
	c := temperatureClient{Client: inner, temperature: 0}
	_, _ = c.Chat(context.Background(), llm.Request{})
	set := 0.9
	_, _ = c.Chat(context.Background(), llm.Request{Temperature: &set})
	if got := inner.reqs[0].Temperature; got == nil || *got != 0 {
		t.Errorf("unset temperature sent as %v, want 0", got)
	}
	if got := inner.reqs[1].Temperature; got == nil || *got != 0.9 {
		t.Errorf("the caller's temperature became %v", got)
	}
}

// The rein-no-tool ablation offers the agent no recovery tool, and a call
// of one anyway is renamed so the agent worker answers it as unknown.
func TestWithholdClientWithholdsTheRecoveryTools(t *testing.T) {
	inner := &fakeClient{fn: func(llm.Request) llm.Response {
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "ambiguity_report"}, {ID: "c2", Name: "get_user_details"}}}
	}}
	c := withholdClient{Client: inner, withheld: recoveryToolNames(defaultTaxonomy(t))}
	resp, _ := c.Chat(context.Background(), llm.Request{Tools: []llm.Tool{{Name: "think"}, {Name: "ambiguity_report"},
		{Name: "transfer_to_human_agents"}, {Name: "get_user_details"}}})
	var offered []string
	for _, tl := range inner.reqs[0].Tools {
		offered = append(offered, tl.Name)
	}
	if strings.Join(offered, ",") != "think,get_user_details" {
		t.Errorf("offered %v", offered)
	}
	if resp.ToolCalls[0].Name != WithheldPrefix+"ambiguity_report" || resp.ToolCalls[1].Name != "get_user_details" {
		t.Errorf("calls %+v", resp.ToolCalls)
	}
}
