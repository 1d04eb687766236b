package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
)

// The agent's model is wrapped, outermost first, in openingClient (the
// recorded opening), meterClient (tokens and model time per conversation)
// and, under self-refine, refineClient. The pipeline sees one llm.Client.

// openingClient answers user turn 1 of an error scenario with the
// opening's recorded mishandling reply instead of asking the model: the
// opening is the same in every condition, and the agent's own work starts
// at the follow-up. The reply still flows through the pipeline as the
// agent's turn (REIN_TURNS, REIN_STEPS, the agent's internal context).
type openingClient struct {
	llm.Client
	tap *tap
}

func (c openingClient) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	if userTurns(req.Messages) == 1 {
		if cv := c.tap.lookup(firstUser(req.Messages)); cv != nil && cv.scenario.Opening != nil {
			return llm.Response{Content: cv.scenario.Opening.Mishandling, Model: "recorded-opening", StopReason: "stop"}, nil
		}
	}
	return c.Client.Chat(ctx, req)
}

// temperatureClient sends the run's agent temperature with every call the
// agent loop makes without one, so a run's sampling is set, not left to
// the provider, and is the one run.json records.
type temperatureClient struct {
	llm.Client
	temperature float64
}

func (c temperatureClient) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	if req.Temperature == nil {
		t := c.temperature
		req.Temperature = &t
	}
	return c.Client.Chat(ctx, req)
}

// withholdClient is the rein-no-tool ablation: the agent is not offered
// the withheld tools (the taxonomy's recovery tools), so a planted plan
// names a tool the agent does not have. The agent worker runs recovery
// tools whatever the catalogue says, so a call of a withheld tool is
// renamed (WithheldPrefix) and the worker answers it as an unknown tool,
// as a deployment without that tool would.
type withholdClient struct {
	llm.Client
	withheld map[string]bool
}

// WithheldPrefix marks a call of a withheld tool in the rein-no-tool
// ablation's transcripts.
const WithheldPrefix = "withheld_"

func (c withholdClient) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	var tools []llm.Tool
	for _, t := range req.Tools {
		if !c.withheld[t.Name] {
			tools = append(tools, t)
		}
	}
	req.Tools = tools
	resp, err := c.Client.Chat(ctx, req)
	for i, tc := range resp.ToolCalls {
		if c.withheld[tc.Name] {
			resp.ToolCalls[i].Name = WithheldPrefix + tc.Name
		}
	}
	return resp, err
}

// recoveryToolNames are the taxonomy's recovery tools, the planted
// think step's own tool aside.
func recoveryToolNames(tax *inception.Taxonomy) map[string]bool {
	out := map[string]bool{}
	for _, t := range tax.ErrorTypes {
		if t.RecoveryTool != "" && t.RecoveryTool != schemas.ToolThink {
			out[t.RecoveryTool] = true
		}
	}
	return out
}

// meterClient counts each conversation's agent tokens and model time.
type meterClient struct {
	llm.Client
	tap *tap
}

func (c meterClient) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	start := time.Now()
	resp, err := c.Client.Chat(ctx, req)
	if cv := c.tap.lookup(firstUser(req.Messages)); cv != nil {
		cv.addAgent(userTurns(req.Messages), time.Since(start), resp.Usage)
	}
	return resp, err
}

// refineClient is the self-refine baseline: the model's first draft of a
// user turn, a text reply or tool calls alike, is checked once for the
// taxonomy's errors, and its second answer (text or tool calls) is what the
// agent loop gets. The check is not kept in the agent's context.
type refineClient struct {
	llm.Client
	tap    *tap
	prompt string
}

func (c refineClient) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	draft, err := c.Client.Chat(ctx, req)
	if err != nil || len(draft.ToolCalls) == 0 && draft.Content == "" {
		return draft, err
	}
	cv := c.tap.lookup(firstUser(req.Messages))
	if cv == nil || !cv.refineOnce(userTurns(req.Messages)) {
		return draft, nil
	}
	check := req
	msgs := append([]llm.Message(nil), req.Messages...)
	if len(draft.ToolCalls) == 0 {
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: draft.Content},
			llm.Message{Role: llm.RoleUser, Content: c.prompt})
	} else {
		// A tool call without its result would be refused by the providers'
		// APIs, so the drafted calls are described in the check instead.
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: describeCalls(draft.ToolCalls) + "\n\n" + c.prompt})
	}
	check.Messages = msgs
	final, err := c.Client.Chat(ctx, check)
	if err != nil {
		return draft, nil // the check failed: the draft stands
	}
	final.Usage.InputTokens += draft.Usage.InputTokens
	final.Usage.OutputTokens += draft.Usage.OutputTokens
	final.Usage.CachedInputTokens += draft.Usage.CachedInputTokens
	return final, nil
}

// describeCalls writes drafted tool calls as the self-refine check shows
// them to the model.
func describeCalls(calls []llm.ToolCall) string {
	var b strings.Builder
	b.WriteString("Your draft is to call these tools:")
	for _, c := range calls {
		fmt.Fprintf(&b, "\n- %s %s", c.Name, c.Arguments)
	}
	return b.String()
}
