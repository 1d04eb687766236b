package run

import (
	"context"
	"encoding/json"
	"time"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
)

// Spec is what one pipeline is started with: one condition on one domain.
// The runner builds the inception module and the agent's model (with the
// condition's wrappers); the Starter only wires them into the stages.
type Spec struct {
	// Condition names the condition (for logs and the data directory).
	Condition string
	// Domain is the agent's τ-bench domain, airline or retail.
	Domain string
	// DataDir is the domain's τ-bench data directory the agent's tools run on.
	DataDir string
	// SystemPrompt is the agent's fixed system prompt (the domain policy,
	// with the taxonomy appended under npi).
	SystemPrompt string
	// Module is the detector's inception module.
	Module inception.Module
	// TaxonomyVersion is recorded in every detection.
	TaxonomyVersion string
	// Agent is the agent worker's model.
	Agent llm.Client
	// StorageDir is where the pipeline's JetStream keeps its files: a
	// fresh directory under the run directory, which the runner removes
	// before the start (a killed run leaves it behind) and the pipeline
	// removes when it closes.
	StorageDir string
}

// Pipeline is one running rein pipeline: the embedded JetStream server
// and the detector, injector and agent-worker stages as `rein serve` runs
// them. Turn publishes a user turn to REIN_TURNS and waits for what the
// pipeline did with it. Conversations may run concurrently; the turns of
// one conversation are played one at a time.
type Pipeline interface {
	Turn(ctx context.Context, conversation string, turn int, text string) (Outcome, error)
	// Close stops the stages and the server.
	Close() error
}

// Starter starts a pipeline for a spec. cmd/rein implements it with its
// runtime (see cmd/rein/eval.go); tests may too.
type Starter func(ctx context.Context, spec Spec) (Pipeline, error)

// Outcome is what the pipeline did for one user turn, read from its
// streams.
type Outcome struct {
	// Reply is the agent's reply (empty with Replied false when the turn
	// ended without one: agent unavailable or unanswered).
	Reply   string
	Replied bool
	// Calls are the agent's tool calls of the turn in order, think steps
	// left out.
	Calls []Call
	// Escalated is set when the turn handed the conversation to a human
	// (transfer_to_human_agents, max_steps, agent_unavailable);
	// EscalationReason says which.
	Escalated        bool
	EscalationReason string
	// Detection is the detector's decision on the turn.
	Detection Detection
	// Injected: the turn's task carried a planted thought.
	Injected bool
	// ReinLatency is rein's own time for the turn: from publishing the
	// user turn to the task being stored, less the inception model's time.
	ReinLatency time.Duration
}

// Call is one tool call of the agent.
type Call struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Output is the tool's result as the agent saw it.
	Output string `json:"output,omitempty"`
}

// Detection is the part of a dev.rein.detection.v1 the runner scores.
type Detection struct {
	Rein      bool    `json:"rein"`
	ErrorType string  `json:"error_type,omitempty"`
	Tokens    int     `json:"tokens,omitempty"`
	LatencyMs float64 `json:"latency_ms"`
	Failed    bool    `json:"failed,omitempty"`
	Module    string  `json:"module,omitempty"`
	Model     string  `json:"model,omitempty"`
}
