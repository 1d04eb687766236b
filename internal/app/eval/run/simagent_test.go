package run

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/llm"
)

func think(thought string) llm.Message {
	args, _ := json.Marshal(map[string]string{"thought": thought})
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "p", Name: "think", Arguments: args}}}
}

func toolResult(name string) llm.Message {
	return llm.Message{Role: llm.RoleTool, Name: name, Content: "ok"}
}

func assistantCall(name string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: name, Name: name, Arguments: json.RawMessage(`{}`)}}}
}

// The simulator follows a plan planted at the error turn while answering
// the follow-up: ambiguity_report, a question, then the task's
// ground-truth actions and its outputs. Without a plan it mishandles.
func TestSimAgentFollowsAPlantedPlan(t *testing.T) {
	s := bundled(t, "air-ana-1")
	task := taubench.Task{
		Actions: []taubench.Action{{Name: "get_user_details", Kwargs: json.RawMessage(`{"user_id":"u"}`)}, {Name: "respond", Kwargs: json.RawMessage(`{}`)}, {Name: "cancel_reservation", Kwargs: json.RawMessage(`{"reservation_id":"R"}`)}},
		Outputs: []string{"42"},
	}
	tp, _ := registered(t, s.Opening.ErrorTurn, s, task)
	a := simAgent{tap: tp}
	msgs := []llm.Message{user(s.Opening.ErrorTurn), think("I will call ambiguity_report and ask."), toolResult("think"),
		{Role: llm.RoleAssistant, Content: s.Opening.Mishandling}, user(s.Opening.FollowUp)}
	steps := []string{}
	for range 8 {
		resp, err := a.Chat(context.Background(), llm.Request{Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ToolCalls) == 0 {
			steps = append(steps, "reply:"+resp.Content)
			if resp.Content == "All done. 42" {
				break
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content}, user("the Atlanta one"))
			continue
		}
		c := resp.ToolCalls[0]
		steps = append(steps, c.Name)
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls}, toolResult(c.Name))
	}
	want := []string{"ambiguity_report", "reply:I want to be sure I act on the right thing. Could you tell me exactly which one you mean, and what you want done?",
		"get_user_details", "cancel_reservation", "reply:All done. 42"}
	if len(steps) != len(want) {
		t.Fatalf("steps %q, want %q", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Errorf("step %d: %q, want %q", i, steps[i], want[i])
		}
	}
	// No plan: the follow-up is mishandled and nothing runs.
	resp, _ := a.Chat(context.Background(), llm.Request{Messages: []llm.Message{user(s.Opening.ErrorTurn), {Role: llm.RoleAssistant, Content: "x"}, user(s.Opening.FollowUp)}})
	if len(resp.ToolCalls) != 0 || resp.Content != "I understand. I have gone ahead as I described." {
		t.Errorf("without a plan: %+v", resp)
	}
}

// A transfer plan ends in transfer_to_human_agents and a closing line.
func TestSimAgentTransfers(t *testing.T) {
	s := bundled(t, "air-ua-1")
	tp, _ := registered(t, s.Opening.ErrorTurn, s, taubench.Task{})
	a := simAgent{tap: tp}
	msgs := []llm.Message{user(s.Opening.ErrorTurn), think("Call transfer_to_human_agents with a summary."), toolResult("think")}
	resp, _ := a.Chat(context.Background(), llm.Request{Messages: msgs})
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "transfer_to_human_agents" {
		t.Fatalf("got %+v", resp)
	}
	msgs = append(msgs, assistantCall("transfer_to_human_agents"), toolResult("transfer_to_human_agents"))
	if resp, _ = a.Chat(context.Background(), llm.Request{Messages: msgs}); len(resp.ToolCalls) != 0 || resp.Content == "" {
		t.Errorf("after the transfer: %+v", resp)
	}
}
