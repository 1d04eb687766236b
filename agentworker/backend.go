package agentworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams/bus"
)

// Backend kinds (Config.Backend).
const (
	BackendDomain = "domain" // the built-in τ-bench domains, state in the conversation
	BackendHTTP   = "http"   // each call POSTed to a URL with an Idempotency-Key
	BackendNone   = "none"   // sidecar mode: the platform runs its own agent
)

// ToolCall is one call of a business tool with the ids that make it
// idempotent: the same conversation, turn and step always name the same call.
type ToolCall struct {
	Tenant       string          `json:"tenant"`
	Conversation string          `json:"conversation"`
	Turn         int             `json:"turn"`
	Step         int             `json:"step"`
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments"`
}

// IdempotencyKey is <tenant>.<conversation>/<turn>/<step>.
func (c ToolCall) IdempotencyKey() string {
	return bus.ConversationKey(c.Tenant, c.Conversation) + "/" + strconv.Itoa(c.Turn) + "/" + strconv.Itoa(c.Step)
}

// Backend runs the agent's business tools.
type Backend interface {
	// Tools is the catalogue offered to the model (the recovery tools are
	// added by the stage when missing).
	Tools() []llm.Tool
	// External reports whether calls have effects outside the conversation
	// state (an HTTP service): the stage then persists each call before
	// running it, so a resumed turn repeats the same call with the same
	// idempotency key rather than asking the model again.
	External() bool
	// Open returns the tools of one conversation, restored from the bytes
	// its State returned last (nil for a new conversation).
	Open(state []byte) (Conversation, error)
}

// Conversation runs tool calls for one conversation.
type Conversation interface {
	// Call runs one call. A failed tool returns an error wrapping ErrTool
	// (or taubench.ErrTool) whose text is the observation; any other error
	// is a backend failure and the task is retried.
	Call(ctx context.Context, c ToolCall) (string, error)
	// State is what must be persisted with the conversation so that a
	// resumed worker sees the effects of the calls made so far.
	State() ([]byte, error)
}

// DomainBackend serves a built-in domain: every conversation gets a
// copy-on-write session whose overlay is persisted with the conversation,
// so a call whose result was not persisted is re-applied to the state from
// before it, never on top of itself.
type DomainBackend struct{ d *taubench.Domain }

// NewDomainBackend serves the domain d.
func NewDomainBackend(d *taubench.Domain) *DomainBackend { return &DomainBackend{d: d} }

// Tools is the domain's catalogue.
func (b *DomainBackend) Tools() []llm.Tool { return b.d.Tools() }

// External is false: all effects live in the persisted overlay.
func (b *DomainBackend) External() bool { return false }

// Open restores the conversation's session.
func (b *DomainBackend) Open(state []byte) (Conversation, error) {
	if len(state) == 0 {
		return domainConv{b.d.NewSession()}, nil
	}
	s, err := taubench.RestoreSession(b.d, state)
	if err != nil {
		return nil, fmt.Errorf("%w: restore domain overlay: %w", ErrBadState, err)
	}
	return domainConv{s}, nil
}

type domainConv struct{ s *taubench.Session }

func (c domainConv) Call(ctx context.Context, tc ToolCall) (string, error) {
	return c.s.Call(ctx, tc.Name, tc.Arguments)
}

func (c domainConv) State() ([]byte, error) { return c.s.Marshal() }

func (c domainConv) Writes() uint64 { return c.s.Writes() }

// writeCounter is a Conversation that can tell whether a call changed
// what State returns: Writes moves with every possible change. Without
// it, every call counts as a change.
type writeCounter interface{ Writes() uint64 }

// writes is conv's write count; ok is false when it keeps none.
func writes(conv Conversation) (n uint64, ok bool) {
	if w, is := conv.(writeCounter); is {
		return w.Writes(), true
	}
	return 0, false
}

// isToolError reports whether err is a tool failure the agent should see.
func isToolError(err error) bool {
	return errors.Is(err, ErrTool) || errors.Is(err, taubench.ErrTool)
}

// toolError is a tool failure with the observation as its text.
type toolError struct{ msg string }

func (e *toolError) Error() string        { return e.msg }
func (e *toolError) Is(target error) bool { return target == ErrTool }
