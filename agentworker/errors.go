package agentworker

import "errors"

// Sentinel errors of the agentworker package. Callers test them with errors.Is.
var (
	// ErrInvalidConfig is returned by New for an unusable configuration.
	ErrInvalidConfig = errors.New("invalid agent worker config")
	// ErrTool marks a failed tool call whose message is the observation the
	// agent sees (the built-in domains' domains.ErrTool counts as well).
	ErrTool = errors.New("tool error")
	// ErrBackend marks a tool backend that could not run a call at all (the
	// HTTP server kept failing); the task is retried.
	ErrBackend = errors.New("tool backend failure")
	// ErrEmptyReply is returned when the model answers with neither text
	// nor tool calls; the task is retried.
	ErrEmptyReply = errors.New("model returned an empty reply")
	// ErrStateConflict is returned when the conversation state in
	// REIN_CONVERSATIONS was written by another worker since it was read;
	// the task is retried on the newer state.
	ErrStateConflict = errors.New("conversation state changed underneath")
	// ErrBadState is returned for a stored conversation state that cannot
	// be decoded.
	ErrBadState = errors.New("bad conversation state")
	// ErrNotHandedOff is returned by Release for a conversation with no
	// stored escalation: it was never handed to a human.
	ErrNotHandedOff = errors.New("conversation was not handed to a human")
	// ErrAlreadyReleased is returned by Release when the conversation's
	// last handoff is released already.
	ErrAlreadyReleased = errors.New("conversation already given back to the agent")
)
