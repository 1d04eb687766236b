package run

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
)

// SimAgentModel is the model label of the offline agent simulator.
const SimAgentModel = "eval-sim-agent"

// simAgent is the offline task agent of `rein eval run` with the scripted
// provider: a deterministic SIMULATOR, not a model, so that the harness can
// be seen working without one. It follows a planted plan when one is in its
// context and mishandles otherwise:
//
//   - a think step naming transfer_to_human_agents or ambiguity_report that
//     was not yet acted on: it calls that tool (the plan may have been
//     planted at an earlier turn: the error turn, answered by the recorded
//     opening);
//   - right after ambiguity_report: it asks the user which one they mean;
//   - on a clean scenario, or once the user answered after a report: it
//     carries out the task's ground-truth actions one call at a time, then
//     replies with the task's required outputs;
//   - otherwise (an error scenario without a plan): it replies as if the
//     request were settled and does nothing, which the success criterion
//     counts as a failure.
//
// NPI's prompt and self-refine's check do not change what it does: its
// figures measure the harness, never a baseline.
type simAgent struct{ tap *tap }

func (simAgent) Provider() string { return llm.ProviderScripted }
func (simAgent) Model() string    { return SimAgentModel }

func (a simAgent) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	msgs := req.Messages
	cv := a.tap.lookup(firstUser(msgs))
	if cv == nil || len(msgs) == 0 {
		return text("I am sorry, I cannot help with that here."), nil
	}
	pending, reportedAt, done := "", -1, 0
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			switch c.Name {
			case schemas.ToolThink:
				// A plan is followed only with a tool the agent is offered.
				if t := plannedTool(c.Arguments); t != "" && offered(req.Tools, t) {
					pending = t
				}
			case schemas.ToolAmbiguityReport:
				pending, reportedAt = "", i
			case schemas.ToolTransfer:
				pending = ""
			default:
				done++
			}
		}
	}
	last := msgs[len(msgs)-1]
	switch {
	case pending == schemas.ToolTransfer:
		return call(len(msgs), schemas.ToolTransfer, map[string]string{
			"summary": "The customer asked for something I cannot do with my tools: " + clip(lastUser(msgs), 300)})
	case pending == schemas.ToolAmbiguityReport:
		return call(len(msgs), schemas.ToolAmbiguityReport, map[string]string{
			"report": "The request is ambiguous: " + clip(lastUser(msgs), 300)})
	case last.Role == llm.RoleTool && last.Name == schemas.ToolTransfer:
		return text("I have passed your request to a human agent, who will continue from here."), nil
	case last.Role == llm.RoleTool && last.Name == schemas.ToolAmbiguityReport:
		return text("I want to be sure I act on the right thing. Could you tell me exactly which one you mean, and what you want done?"), nil
	}
	answered := false
	for _, m := range msgs[reportedAt+1:] {
		answered = answered || (reportedAt >= 0 && m.Role == llm.RoleUser)
	}
	if cv.scenario.Opening == nil || answered {
		if acts := groundTruth(cv.task.Actions); done < len(acts) {
			var args any = map[string]any{}
			if len(acts[done].Kwargs) > 0 {
				args = acts[done].Kwargs
			}
			return call(len(msgs), acts[done].Name, args)
		}
		reply := "All done."
		if len(cv.task.Outputs) > 0 {
			reply += " " + strings.Join(cv.task.Outputs, ", ")
		}
		return text(reply), nil
	}
	if cv.scenario.Category() == eval.CategoryUnsupported {
		return text("Understood, I have noted your request and it is being taken care of."), nil
	}
	return text("I understand. I have gone ahead as I described."), nil
}

// offered reports whether the request offers the named tool (a request
// without a catalogue offers every tool).
func offered(tools []llm.Tool, name string) bool {
	return len(tools) == 0 || slices.ContainsFunc(tools, func(t llm.Tool) bool { return t.Name == name })
}

// plannedTool names the recovery tool a planted thought tells the agent to
// call, or "" when it names none.
func plannedTool(args json.RawMessage) string {
	var a struct {
		Thought string `json:"thought"`
	}
	_ = json.Unmarshal(args, &a)
	switch {
	case strings.Contains(a.Thought, schemas.ToolTransfer):
		return schemas.ToolTransfer
	case strings.Contains(a.Thought, schemas.ToolAmbiguityReport):
		return schemas.ToolAmbiguityReport
	}
	return ""
}

func lastUser(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

func text(s string) llm.Response {
	return llm.Response{Content: s, Model: SimAgentModel, StopReason: "stop"}
}

func call(step int, name string, args any) (llm.Response, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return llm.Response{}, fmt.Errorf("sim agent: %s arguments: %w", name, err)
	}
	return llm.Response{Model: SimAgentModel, StopReason: "tool_calls",
		ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("sim_%d", step), Name: name, Arguments: raw}}}, nil
}

func clip(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// groundTruth is a task's actions without τ-bench's "respond" pseudo-action
// (the required outputs go into the final reply instead).
func groundTruth(acts []taubench.Action) []taubench.Action {
	out := make([]taubench.Action, 0, len(acts))
	for _, a := range acts {
		if a.Name != "respond" {
			out = append(out, a)
		}
	}
	return out
}
