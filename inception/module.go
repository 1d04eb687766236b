package inception

import (
	"context"
	"errors"

	"github.com/reinception/rein/internal/llm"
)

// Dialogue roles of an Utterance.
const (
	RoleUser  = "user"
	RoleAgent = "agent"
)

// Module names.
const (
	ModuleLLM     = "llm"
	ModuleRules   = "rules"
	ModuleCascade = "cascade"
)

// Utterance is one surface turn: what the user or the agent said.
type Utterance struct {
	Role string `json:"role"` // RoleUser or RoleAgent
	Text string `json:"text"`
}

// Input is what an inception module sees at one user turn: the surface
// dialogue oldest first, whose last element is the user turn to judge, and
// the agent's tool catalogue.
type Input struct {
	Tenant   string
	Domain   string
	Dialogue []Utterance
	Tools    []llm.Tool
}

// Decision is a module's verdict on one user turn. Reasoning is the thought
// to plant as the agent's think step when Rein is true.
type Decision struct {
	Rein         bool   `json:"rein"`
	ErrorType    string `json:"error_type,omitempty"`
	Category     string `json:"category,omitempty"`
	RecoveryTool string `json:"recovery_tool,omitempty"`
	Evidence     string `json:"evidence,omitempty"`
	Reasoning    string `json:"reasoning,omitempty"`
	Model        string `json:"model,omitempty"`
	// ModelVersion names the learned model files the decision used (their
	// content hashes, e.g. typed@sha256:…), "" when it used none.
	ModelVersion    string `json:"model_version,omitempty"`
	Tokens          int    `json:"tokens,omitempty"`
	Failed          bool   `json:"failed"`
	FailReason      string `json:"fail_reason,omitempty"`
	TaxonomyVersion string `json:"taxonomy_version"`
}

// Module is an inception module. Detect returns an error only when the
// module could not judge at all (model down, deadline); the caller then
// fails open. An unusable model answer is a Decision with Failed set.
// Implementations are safe for concurrent use.
type Module interface {
	Name() string
	Detect(ctx context.Context, in Input) (Decision, error)
}

// ContextFree is implemented by modules that can tell, before judging,
// whether their decision depends on the agent's replies. The stage keeps
// the agent's replies out of a conversation's surface context until a
// module needs them: it calls NeedsContext with the dialogue as far as
// known (every user turn, but possibly not every agent reply; the slice is
// the stage's own and must be neither kept nor modified) and, on true,
// brings the agent replies up to date before Detect. NeedsContext must
// answer true whenever Detect on the full dialogue could decide otherwise
// than on the one given; a false answer for a turn whose decision does
// not depend on the agent's words saves the reads. Modules that do not
// implement it always get the full dialogue.
type ContextFree interface {
	NeedsContext(in Input) bool
}

// Instant is implemented by modules that judge from memory, never wait
// and ignore the context (rules): a deadline could not interrupt them, so
// the stage runs them without one and saves a timer per turn.
type Instant interface {
	Instant() bool
}

// LastUser returns the turn to judge, or false when the dialogue does not
// end with a user turn.
func (in Input) LastUser() (string, bool) {
	if len(in.Dialogue) == 0 {
		return "", false
	}
	u := in.Dialogue[len(in.Dialogue)-1]
	if u.Role != RoleUser {
		return "", false
	}
	return u.Text, true
}

// FailReason is the fail_reason a detection records for a module error.
func FailReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "inception deadline exceeded"
	default:
		msg := err.Error()
		if len(msg) > 500 {
			msg = msg[:500]
		}
		return msg
	}
}
