package schemas

import "encoding/json"

// Turn is the data of dev.rein.turn.v1: one surface-dialogue message.
type Turn struct {
	Role string `json:"role" jsonschema:"required,enum=user,enum=agent"`
	Text string `json:"text" jsonschema:"required,minLength=1,maxLength=65536"`
	Turn int    `json:"turn" jsonschema:"minimum=0,maximum=9007199254740991"`
}

// Detection is the data of dev.rein.detection.v1: the inception module's
// decision for one user turn, yes or no.
type Detection struct {
	Turn         int    `json:"turn" jsonschema:"required,minimum=0,maximum=9007199254740991"`
	UserText     string `json:"user_text" jsonschema:"required"`
	Rein         bool   `json:"rein" jsonschema:"required"`
	ErrorType    string `json:"error_type,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_]{0\\,63}$"`
	Category     string `json:"category,omitempty" jsonschema:"maxLength=64"`
	RecoveryTool string `json:"recovery_tool,omitempty" jsonschema:"maxLength=128"`
	Evidence     string `json:"evidence,omitempty" jsonschema:"maxLength=4096"`
	Reasoning    string `json:"reasoning,omitempty" jsonschema:"maxLength=16384"`
	Module       string `json:"module" jsonschema:"required,minLength=1"`
	Model        string `json:"model,omitempty"`
	// ModelVersion names the learned model files behind the decision
	// (inception.Decision.ModelVersion), when any.
	ModelVersion    string  `json:"model_version,omitempty" jsonschema:"maxLength=256"`
	LatencyMS       float64 `json:"latency_ms" jsonschema:"required,minimum=0"`
	Tokens          int     `json:"tokens" jsonschema:"required,minimum=0"`
	Failed          bool    `json:"failed" jsonschema:"required"`
	FailReason      string  `json:"fail_reason,omitempty"`
	TaxonomyVersion string  `json:"taxonomy_version" jsonschema:"required,minLength=1"`
	// Experiment and Arm say which holdout arm the conversation is in
	// (empty when its tenant runs no experiment). In ArmControl the
	// detector still decides, but the task carries no thought.
	Experiment string `json:"experiment,omitempty" jsonschema:"pattern=^[A-Za-z0-9_-]{1\\,128}$"`
	Arm        string `json:"arm,omitempty" jsonschema:"enum=treatment,enum=control"`
}

// Inception is the block the injector plants: an assistant tool call
// think(thought) followed by its empty tool result.
type Inception struct {
	Thought      string `json:"thought" jsonschema:"required,minLength=1,maxLength=16384"`
	ErrorType    string `json:"error_type" jsonschema:"required,minLength=1"`
	RecoveryTool string `json:"recovery_tool" jsonschema:"required,minLength=1"`
}

// Task is the data of dev.rein.task.v1: one agent work item.
type Task struct {
	Turn        int        `json:"turn" jsonschema:"required,minimum=0,maximum=9007199254740991"`
	UserText    string     `json:"user_text" jsonschema:"required"`
	DetectionID string     `json:"detection_id,omitempty"`
	Inception   *Inception `json:"inception" jsonschema:"required,nullable"`
}

// Step is the data of dev.rein.step.v1: one element of the agent's internal context.
type Step struct {
	Turn      int             `json:"turn" jsonschema:"required,minimum=0,maximum=9007199254740991"`
	Step      int             `json:"step" jsonschema:"required,minimum=0"`
	Kind      string          `json:"kind" jsonschema:"required,enum=think,enum=tool_call,enum=tool_result,enum=reply"`
	Name      string          `json:"name,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    string          `json:"output,omitempty"`
	Injected  bool            `json:"injected" jsonschema:"required"`
}

// Steps is the data of dev.rein.steps.v1: the steps of one agent turn
// that ended before it went live, in order, each as its own
// dev.rein.step.v1 would carry it.
type Steps struct {
	Turn  int    `json:"turn" jsonschema:"required,minimum=0,maximum=9007199254740991"`
	Steps []Step `json:"steps" jsonschema:"required,minItems=1"`
}

// Escalation is the data of dev.rein.escalation.v1: the conversation is handed to a human.
type Escalation struct {
	Turn        int    `json:"turn" jsonschema:"required,minimum=0,maximum=9007199254740991"`
	Summary     string `json:"summary" jsonschema:"required"`
	ErrorType   string `json:"error_type,omitempty"`
	Reason      string `json:"reason" jsonschema:"required,minLength=1"`
	DetectionID string `json:"detection_id,omitempty"`
	Thought     string `json:"thought,omitempty"`
}

// Escalation reasons.
const (
	ReasonTransfer = "transfer_to_human_agents"
	ReasonMaxSteps = "max_steps"
	// ReasonAgentUnavailable: the agent could not answer the turn (its
	// model or tools failed past every retry); a human takes it.
	ReasonAgentUnavailable = "agent_unavailable"
)

// Report is the data of dev.rein.report.v1: an ambiguity report by the agent.
type Report struct {
	Turn        int    `json:"turn" jsonschema:"required,minimum=0,maximum=9007199254740991"`
	Report      string `json:"report" jsonschema:"required"`
	ErrorType   string `json:"error_type,omitempty"`
	DetectionID string `json:"detection_id,omitempty"`
}

// DeadLetter is the data of dev.rein.deadletter.v1: a message a stage could not handle.
type DeadLetter struct {
	Stage    string              `json:"stage" jsonschema:"required,minLength=1"`
	Reason   string              `json:"reason" jsonschema:"required,minLength=1"`
	Subject  string              `json:"subject" jsonschema:"required"`
	Stream   string              `json:"stream,omitempty"`
	Sequence uint64              `json:"sequence,omitempty" jsonschema:"minimum=0"`
	Attempts int                 `json:"attempts,omitempty" jsonschema:"minimum=0"`
	Headers  map[string][]string `json:"headers,omitempty"`
	// Data is the original message body (base64 in JSON): the whole body,
	// or, when Truncated, only its first bytes.
	Data []byte `json:"data" jsonschema:"required,nullable"`
	// Truncated says Data (and perhaps Headers) hold only a bounded part of
	// an oversize original: Size and SHA256 describe the whole body. Such a
	// dead letter can be inspected but not redriven.
	Truncated bool `json:"truncated,omitempty"`
	// Size is the original body's length in bytes (set when Truncated).
	Size int64 `json:"size,omitempty" jsonschema:"minimum=0"`
	// SHA256 is the hex SHA-256 of the original body (set when Truncated).
	SHA256 string `json:"sha256,omitempty" jsonschema:"pattern=^[0-9a-f]{64}$"`
}

// HandoffTimeout is the data of dev.rein.handoff.timeout.v1: a handoff item
// nobody claimed before its deadline.
type HandoffTimeout struct {
	Turn         int    `json:"turn" jsonschema:"required,minimum=0,maximum=9007199254740991"`
	EscalationID string `json:"escalation_id" jsonschema:"required,minLength=1"`
	Deadline     string `json:"deadline" jsonschema:"required,format=date-time"`
}

// Unanswered is the data of dev.rein.unanswered.v1: the explicit outcome of
// a user turn that gets no agent reply, and why (UnansweredSuperseded,
// UnansweredFailed, UnansweredHumanPath). With a reply, an escalation or a
// report, it is one of the outcomes that every user turn ends with exactly
// once.
type Unanswered struct {
	Turn   int    `json:"turn" jsonschema:"required,minimum=1,maximum=9007199254740991"`
	Reason string `json:"reason" jsonschema:"required,enum=superseded,enum=failed,enum=human_path"`
	// SupersededBy is the later turn that ran first (reason superseded).
	SupersededBy int `json:"superseded_by,omitempty" jsonschema:"minimum=1,maximum=9007199254740991"`
	// Detail says what failed (reason failed), secrets redacted.
	Detail string `json:"detail,omitempty" jsonschema:"maxLength=4096"`
	// EscalatedTurn is the turn that handed the conversation to a human
	// (reason human_path), and HandoffReason that escalation's reason.
	EscalatedTurn int    `json:"escalated_turn,omitempty" jsonschema:"minimum=1,maximum=9007199254740991"`
	HandoffReason string `json:"handoff_reason,omitempty" jsonschema:"maxLength=128"`
}

// Release is the data of dev.rein.release.v1, stored on
// rein.releases.<tenant>.<conv> with id release.<tenant>.<conv>.<turn>: the
// conversation handed to a human at Turn (its escalation's turn) is given
// back to the agent, whose worker answers its next user turn. One release
// per handoff; the record is what an auditor sees of it.
type Release struct {
	Turn          int    `json:"turn" jsonschema:"required,minimum=1,maximum=9007199254740991"`
	Reason        string `json:"reason" jsonschema:"required,enum=operator,enum=quiet_period"`
	HandoffReason string `json:"handoff_reason,omitempty" jsonschema:"maxLength=128"`
	// By names who released it: the operator's --by, or "agentworker".
	By string `json:"by,omitempty" jsonschema:"maxLength=128"`
}

// Redrive is the data of dev.rein.redrive.v1, stored on rein.dlq.redriven:
// the dead letter at DLQSequence was put back on Subject (Stream) and
// stored there at NewSequence. It makes a redrive happen once.
type Redrive struct {
	DLQSequence uint64 `json:"dlq_sequence" jsonschema:"required,minimum=1"`
	Subject     string `json:"subject" jsonschema:"required,minLength=1"`
	Stream      string `json:"stream" jsonschema:"required,minLength=1"`
	NewSequence uint64 `json:"new_sequence" jsonschema:"required,minimum=1"`
}

// Feedback is the data of dev.rein.feedback.v1: what the platform learnt
// of a conversation's outcome. One event per conversation and Key(): a
// second, different one is a conflict.
type Feedback struct {
	Kind string `json:"kind" jsonschema:"required,enum=resolved,enum=abandoned,enum=reopened,enum=satisfaction,enum=label"`
	// Score is the 1-5 satisfaction score (kind satisfaction only).
	Score int `json:"score,omitempty" jsonschema:"minimum=1,maximum=5"`
	// Label names a custom outcome (kind label only), id-safe.
	Label string `json:"label,omitempty" jsonschema:"pattern=^[A-Za-z0-9_-]{1\\,64}$"`
	Note  string `json:"note,omitempty" jsonschema:"maxLength=1024"`
}

// Feedback kinds.
const (
	FeedbackResolved     = "resolved"
	FeedbackAbandoned    = "abandoned"
	FeedbackReopened     = "reopened"
	FeedbackSatisfaction = "satisfaction"
	FeedbackLabel        = "label"
)

// Key is what a conversation's feedback is idempotent on: the kind, or
// label-<label> for a custom label (kinds hold no '-', so none collide).
func (f Feedback) Key() string {
	if f.Kind == FeedbackLabel {
		return "label-" + f.Label
	}
	return f.Kind
}

// Holdout arms of an experiment (Detection.Arm).
const (
	ArmTreatment = "treatment"
	ArmControl   = "control"
)
