package agentworker

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/convcache"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// Config configures the agent-worker stage.
type Config struct {
	// SystemPrompt is the task agent's fixed system prompt; SystemPromptFile
	// reads it from a file instead. For the τ-bench domains it is the
	// domain's policy document: when both are empty and DataDir holds
	// policy.md, that file is used. rein never alters the prompt.
	SystemPrompt     string
	SystemPromptFile string
	// Backend is the tool backend: "domain" (default), "http", or "none"
	// (sidecar mode: the platform runs its own agent; Run then consumes
	// nothing and waits for cancellation).
	Backend string
	// Domain is the built-in domain ("airline" default, or "retail") and
	// DataDir its τ-bench-format data directory. With DataDir empty the
	// stage uses Deps.Domain when given (whatever its name), else the
	// domain's embedded sample data (taubench.Sample).
	Domain  string
	DataDir string
	// HTTP configures the "http" backend.
	HTTP HTTPConfig
	// MaxSteps bounds the model calls of one turn (default 30); reaching it
	// ends the turn with MaxStepsReply and an escalation with reason
	// max_steps.
	MaxSteps      int
	MaxStepsReply string
	// ModelTimeout bounds one model call (default 2m); MaxTokens is passed
	// to the model (0: the provider's default).
	ModelTimeout time.Duration
	MaxTokens    int
	// Persist says when the conversation state is written to
	// REIN_CONVERSATIONS: "step" (default) after every tool result that
	// changed the backend's conversation state (with an external backend,
	// after every result) and at the end of the turn; a result that changed
	// nothing (a read, think, a report, a hand-off) is written with the next
	// write, and always before any of the turn's events is published, so a
	// turn cut short after it asks the model again from the last write.
	// "turn" writes only at the end of the turn. "turn" saves a KV write
	// per writing tool step and is only honoured by backends without
	// external effects (the built-in domains): a turn cut short by a crash
	// is then re-run from its start on the overlay stored before it, so no
	// effect is applied twice, but the model is asked again.
	Persist string
	// LiveStepsAfter: a turn running longer than this publishes its steps
	// after each tool step; a quicker turn publishes them with its reply
	// (default DefaultLiveStepsAfter; a negative value publishes every step
	// at once). A published step is always in the stored State, so a live
	// step whose call changed nothing costs a state write of its own that a
	// quicker turn does not pay: behind slow models, where every turn runs
	// past the default, a larger value saves that write and a round of
	// publishes per read, and the steps arrive with the reply.
	LiveStepsAfter time.Duration
	// StepEvents says how a turn's steps are stored on REIN_STEPS: "step"
	// (default) one dev.rein.step.v1 each; "turn" one dev.rein.steps.v1
	// holding them all, in order, for a turn that ends before
	// LiveStepsAfter (a turn that runs longer still publishes them one by
	// one as it goes, to its end). "turn" saves two or more stored
	// messages per quick turn; a subscriber must then read both types.
	// A turn that goes live in "turn" mode writes its State before its
	// first single step (State.LiveSteps), with Persist "turn" too.
	StepEvents string
	// AckWait is how long a delivered turn stays owned without a heartbeat
	// before the server redelivers it — after a crash, how soon another
	// holder gets it (0: the stage's default).
	AckWait time.Duration
	// PinTTL is how soon a standby replica of the stage takes over from
	// one that crashed (0: streams.DefaultPinTTL).
	PinTTL time.Duration
	// Speculate starts each user turn's first model call as soon as the
	// turn is stored, while the detector judges it, and uses the answer
	// when nothing is planted (see speculate.go): clean turns no longer
	// wait for the inception module. No tool runs before the decision.
	Speculate bool
	// Workers bounds the turns run at once, the stage's in-flight limit
	// (default: the consumer's, 4096). Turns are scheduled by conversation:
	// a conversation waiting on the model holds one slot, never another
	// conversation's.
	Workers int
	// InFlightBytes bounds the bytes of the delivered messages the stage
	// holds, queued or being handled (0: consume.DefaultMaxInFlightBytes,
	// 64 MiB): past it the consumer stops pulling.
	InFlightBytes int64
	// MaxConversations bounds the conversation states kept in memory and
	// IdleTTL drops one not used for that long (defaults
	// convcache.DefaultMax, 100,000, a backstop MaxCacheBytes binds before,
	// and 30m); a dropped state is read back from REIN_CONVERSATIONS.
	MaxConversations int
	IdleTTL          time.Duration
	// MaxCacheBytes bounds the same states by size (each measured as its
	// messages' text, arguments and overlay plus a fixed cost; default
	// DefaultCacheBytes, 128 MiB), whatever the conversations' lengths.
	MaxCacheBytes int64
	// RecheckAfter: a task stored longer ago than this, of a turn its
	// conversation's state does not know of, is first checked against the
	// conversation's last stored agent reply: the state may have expired
	// with the bucket's max age after the turn was answered, and a durable
	// created anew reads REIN_TASKS from its start. When that reply is of
	// this turn or a later one the task is acked and the turn not run
	// again. Default: half of REIN_TURNS' duplicate window, read from the
	// stream when the stage starts.
	RecheckAfter time.Duration
	// QuietPeriod gives a conversation handed to a human because the agent
	// could not answer (agent_unavailable: its model or tools failed past
	// every retry) back to the agent: its first user turn once this long
	// has passed since the handoff, and since the last agent_unavailable
	// this worker recorded, is answered by the agent, and a
	// dev.rein.release.v1 (reason quiet_period) records it. Default
	// DefaultQuietPeriod; a negative value never releases automatically
	// (an operator still can: rein handoff release). Handoffs the agent
	// chose (transfer_to_human_agents) or max_steps are never released
	// automatically.
	QuietPeriod time.Duration
}

// DefaultQuietPeriod is Config.QuietPeriod's default: the escalation
// sink's handoff deadline (escalation.DefaultHandoffDeadline), so that an
// agent_unavailable handoff nobody claimed has timed out at the desk
// before the agent takes the conversation back.
const DefaultQuietPeriod = 5 * time.Minute

// minQuietPeriod is the shortest QuietPeriod accepted: a shorter one is
// no quiet period (more likely a unit mistake).
const minQuietPeriod = time.Second

// DefaultLiveStepsAfter is Config.LiveStepsAfter's default.
const DefaultLiveStepsAfter = time.Second

// Persist modes (Config.Persist).
const (
	PersistStep = "step"
	PersistTurn = "turn"
)

// Step-event modes (Config.StepEvents).
const (
	StepEventsStep = "step"
	StepEventsTurn = "turn"
)

// DefaultMaxStepsReply is what the user is told when the agent reaches MaxSteps.
const DefaultMaxStepsReply = "I'm sorry, I could not finish this request myself. I have passed it to a human colleague who will continue from here."

func (c *Config) defaults() {
	if c.Backend == "" {
		c.Backend = BackendDomain
	}
	if c.Domain == "" {
		c.Domain = taubench.Airline
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = 30
	}
	if c.MaxStepsReply == "" {
		c.MaxStepsReply = DefaultMaxStepsReply
	}
	if c.ModelTimeout == 0 {
		c.ModelTimeout = 2 * time.Minute
	}
	if c.Persist == "" {
		c.Persist = PersistStep
	}
	if c.LiveStepsAfter == 0 {
		c.LiveStepsAfter = DefaultLiveStepsAfter
	}
	if c.StepEvents == "" {
		c.StepEvents = StepEventsStep
	}
	if c.MaxConversations == 0 {
		c.MaxConversations = convcache.DefaultMax
	}
	if c.MaxCacheBytes == 0 {
		c.MaxCacheBytes = DefaultCacheBytes
	}
	if c.IdleTTL == 0 {
		c.IdleTTL = 30 * time.Minute
	}
	if c.QuietPeriod == 0 {
		c.QuietPeriod = DefaultQuietPeriod
	}
}

// Validate checks the configuration after defaults are applied.
func (c Config) Validate() error {
	c.defaults()
	switch {
	case c.Backend != BackendDomain && c.Backend != BackendHTTP && c.Backend != BackendNone:
		return fmt.Errorf("%w: backend %q must be domain, http or none", ErrInvalidConfig, c.Backend)
	case c.Backend == BackendDomain && c.Domain != taubench.Airline && c.Domain != taubench.Retail:
		return fmt.Errorf("%w: domain %q must be airline or retail", ErrInvalidConfig, c.Domain)
	case c.Backend == BackendHTTP && c.HTTP.URL == "":
		return fmt.Errorf("%w: the http backend needs a URL", ErrInvalidConfig)
	case c.MaxSteps < 1 || c.MaxSteps > 1000:
		return fmt.Errorf("%w: max steps %d must be 1..1000", ErrInvalidConfig, c.MaxSteps)
	case c.ModelTimeout < 0 || c.MaxTokens < 0:
		return fmt.Errorf("%w: negative model timeout or max tokens", ErrInvalidConfig)
	case c.Workers < 0 || c.Workers > 4096:
		return fmt.Errorf("%w: workers %d must be 0 (the default) to 4096", ErrInvalidConfig, c.Workers)
	case c.QuietPeriod > 0 && c.QuietPeriod < minQuietPeriod:
		return fmt.Errorf("%w: quiet period %s must be at least %s (or negative: never release automatically)", ErrInvalidConfig, c.QuietPeriod, minQuietPeriod)
	case c.RecheckAfter < 0:
		return fmt.Errorf("%w: recheck-after %s must not be negative", ErrInvalidConfig, c.RecheckAfter)
	case c.MaxConversations < 1 || c.IdleTTL < time.Second || c.MaxCacheBytes < 0:
		return fmt.Errorf("%w: max conversations, cache bytes or idle TTL out of range", ErrInvalidConfig)
	case c.Persist != PersistStep && c.Persist != PersistTurn:
		return fmt.Errorf("%w: persist %q must be step or turn", ErrInvalidConfig, c.Persist)
	case c.StepEvents != StepEventsStep && c.StepEvents != StepEventsTurn:
		return fmt.Errorf("%w: step events %q must be step or turn", ErrInvalidConfig, c.StepEvents)
	case c.SystemPrompt != "" && c.SystemPromptFile != "":
		return fmt.Errorf("%w: give the system prompt or its file, not both", ErrInvalidConfig)
	}
	return nil
}

// systemPrompt reads the configured prompt.
func (c Config) systemPrompt() (string, error) {
	switch {
	case c.SystemPrompt != "":
		return c.SystemPrompt, nil
	case c.SystemPromptFile != "":
		b, err := os.ReadFile(c.SystemPromptFile)
		if err != nil {
			return "", fmt.Errorf("%w: system prompt: %w", ErrInvalidConfig, err)
		}
		return string(b), nil
	case c.DataDir != "":
		b, err := os.ReadFile(filepath.Join(c.DataDir, "policy.md"))
		if err == nil {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("%w: no system prompt (set SystemPrompt or SystemPromptFile, or a data dir with policy.md)", ErrInvalidConfig)
}

// Deps are the agent worker's collaborators.
type Deps struct {
	streams.StageDeps
	// Model is the task agent's model (purpose "agent").
	Model llm.Client
	// Domain is a loaded domain for the "domain" backend when
	// Config.DataDir is empty.
	Domain *taubench.Domain
	// Backend, when set, replaces the backend Config.Backend names.
	Backend Backend
	// Now is the clock that ages state snapshots against the bucket's
	// max age and times handoffs against Config.QuietPeriod (default
	// time.Now).
	Now func() time.Time
	// TaskKey, when set, is the key rein's injector signs tasks with: a
	// task without a valid signature is never run, but dead-lettered with
	// reason unverified_task and counted (rein_agentworker_unverified_tasks_total).
	TaskKey *schemas.TaskKey
}
