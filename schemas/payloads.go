package schemas

import "encoding/json"

// Turn is the data of dev.rein.turn.v1: one surface-dialogue message.
type Turn struct {
	Role string `json:"role"`
	Text string `json:"text"`
	Turn int    `json:"turn"`
}

// Detection is the data of dev.rein.detection.v1: the inception module's
// decision for one user turn, yes or no.
type Detection struct {
	Turn            int     `json:"turn"`
	UserText        string  `json:"user_text"`
	Rein            bool    `json:"rein"`
	ErrorType       string  `json:"error_type,omitempty"`
	Category        string  `json:"category,omitempty"`
	RecoveryTool    string  `json:"recovery_tool,omitempty"`
	Evidence        string  `json:"evidence,omitempty"`
	Reasoning       string  `json:"reasoning,omitempty"`
	Module          string  `json:"module"`
	Model           string  `json:"model,omitempty"`
	LatencyMS       float64 `json:"latency_ms"`
	Tokens          int     `json:"tokens"`
	Failed          bool    `json:"failed"`
	FailReason      string  `json:"fail_reason,omitempty"`
	TaxonomyVersion string  `json:"taxonomy_version"`
}

// Inception is the block the injector plants: an assistant tool call
// think(thought) followed by its empty tool result.
type Inception struct {
	Thought      string `json:"thought"`
	ErrorType    string `json:"error_type"`
	RecoveryTool string `json:"recovery_tool"`
}

// Task is the data of dev.rein.task.v1: one agent work item.
type Task struct {
	Turn        int        `json:"turn"`
	UserText    string     `json:"user_text"`
	DetectionID string     `json:"detection_id,omitempty"`
	Inception   *Inception `json:"inception"`
}

// Step is the data of dev.rein.step.v1: one element of the agent's internal context.
type Step struct {
	Turn      int             `json:"turn"`
	Step      int             `json:"step"`
	Kind      string          `json:"kind"`
	Name      string          `json:"name,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    string          `json:"output,omitempty"`
	Injected  bool            `json:"injected"`
}

// Escalation is the data of dev.rein.escalation.v1: the conversation is handed to a human.
type Escalation struct {
	Turn        int    `json:"turn"`
	Summary     string `json:"summary"`
	ErrorType   string `json:"error_type,omitempty"`
	Reason      string `json:"reason"`
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
	Turn        int    `json:"turn"`
	Report      string `json:"report"`
	ErrorType   string `json:"error_type,omitempty"`
	DetectionID string `json:"detection_id,omitempty"`
}

// DeadLetter is the data of dev.rein.deadletter.v1: a message a stage could not handle.
type DeadLetter struct {
	Stage    string              `json:"stage"`
	Reason   string              `json:"reason"`
	Subject  string              `json:"subject"`
	Stream   string              `json:"stream,omitempty"`
	Sequence uint64              `json:"sequence,omitempty"`
	Attempts int                 `json:"attempts,omitempty"`
	Headers  map[string][]string `json:"headers,omitempty"`
	// Data is the original message body (base64 in JSON).
	Data []byte `json:"data"`
}

// HandoffTimeout is the data of dev.rein.handoff.timeout.v1: a handoff item
// nobody claimed before its deadline.
type HandoffTimeout struct {
	Turn         int    `json:"turn"`
	EscalationID string `json:"escalation_id"`
	Deadline     string `json:"deadline"`
}

// Unanswered is the data of dev.rein.unanswered.v1: the explicit outcome of
// a user turn that gets no agent reply, and why (UnansweredSuperseded,
// UnansweredFailed). With a reply, an escalation or a report, it is one of
// the outcomes that every user turn ends with exactly once.
type Unanswered struct {
	Turn   int    `json:"turn"`
	Reason string `json:"reason"`
	// SupersededBy is the later turn that ran first (reason superseded).
	SupersededBy int `json:"superseded_by,omitempty"`
	// Detail says what failed (reason failed), secrets redacted.
	Detail string `json:"detail,omitempty"`
}

// Redrive is the data of dev.rein.redrive.v1, stored on rein.dlq.redriven:
// the dead letter at DLQSequence was put back on Subject (Stream) and
// stored there at NewSequence. It makes a redrive happen once.
type Redrive struct {
	DLQSequence uint64 `json:"dlq_sequence"`
	Subject     string `json:"subject"`
	Stream      string `json:"stream"`
	NewSequence uint64 `json:"new_sequence"`
}
