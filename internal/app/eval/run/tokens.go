package run

import (
	"context"
	"unicode/utf8"

	"github.com/reinception/rein/internal/llm"
)

// CharsPerToken is the estimate's ratio: about four characters of English
// text make one token for the byte-pair tokenizers of current models.
const CharsPerToken = 4

// EstimateUsage is the token count given to a model call whose response
// reports none (the scripted simulators, which are not models, or a
// server that does not count): ⌈characters / CharsPerToken⌉ of the
// request (system prompt, messages with their tool calls, tool
// definitions, response schema) as input and of the answer (text and
// tool calls) as output. It is deterministic, so a replayed run counts
// the same; it is an estimate, and the README says so.
func EstimateUsage(req llm.Request, resp llm.Response) llm.Usage {
	in := utf8.RuneCountInString(req.System)
	for _, m := range req.Messages {
		in += utf8.RuneCountInString(m.Content) + callChars(m.ToolCalls)
	}
	for _, t := range req.Tools {
		in += utf8.RuneCountInString(t.Name) + utf8.RuneCountInString(t.Description) + len(t.Parameters)
	}
	if rs := req.ResponseSchema; rs != nil {
		in += len(rs.Schema)
	}
	out := utf8.RuneCountInString(resp.Content) + callChars(resp.ToolCalls)
	return llm.Usage{InputTokens: tokens(in), OutputTokens: tokens(out)}
}

func callChars(calls []llm.ToolCall) int {
	n := 0
	for _, c := range calls {
		n += utf8.RuneCountInString(c.Name) + utf8.RuneCount(c.Arguments)
	}
	return n
}

func tokens(chars int) int { return (chars + CharsPerToken - 1) / CharsPerToken }

// Estimating wraps a client so that a response reporting no usage carries
// EstimateUsage instead; a response with usage is left as it is.
func Estimating(c llm.Client) llm.Client {
	if c == nil {
		return nil
	}
	if _, ok := c.(estimating); ok {
		return c
	}
	return estimating{c}
}

type estimating struct{ llm.Client }

func (e estimating) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := e.Client.Chat(ctx, req)
	if err == nil && resp.Usage == (llm.Usage{}) {
		resp.Usage = EstimateUsage(req, resp)
	}
	return resp, err
}
