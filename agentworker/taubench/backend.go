package taubench

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/reinception/rein/internal/llm"
)

// Backend executes tool calls for one conversation. The agent loop calls
// it; the built-in domains (a *Session) are one implementation.
type Backend interface {
	// Tools is the OpenAI-style tool list offered to the model.
	Tools() []llm.Tool
	// Call runs one tool. A tool failure is returned as an error wrapping
	// ErrTool whose message is exactly the τ-bench observation string; any
	// other error (e.g. a cancelled context) is a failure of the backend.
	Call(ctx context.Context, name string, args json.RawMessage) (string, error)
}

// Observe runs a call and returns the observation the agent sees: the
// result, or the tool error's text. Errors that are not tool errors are
// returned as errors.
func Observe(ctx context.Context, b Backend, name string, args json.RawMessage) (string, error) {
	out, err := b.Call(ctx, name, args)
	if err != nil {
		if errors.Is(err, ErrTool) {
			return err.Error(), nil
		}
		return "", err
	}
	return out, nil
}
