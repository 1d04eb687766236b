package schemas

// CloudEvents type attribute of every event rein produces or accepts.
const (
	TypeTurn      = "dev.rein.turn.v1"
	TypeDetection = "dev.rein.detection.v1"
	TypeTask      = "dev.rein.task.v1"
	TypeStep      = "dev.rein.step.v1"
	// TypeSteps carries every step of an agent turn that ended quickly, in
	// one event, instead of one TypeStep each (an agent worker's opt-in).
	TypeSteps          = "dev.rein.steps.v1"
	TypeEscalation     = "dev.rein.escalation.v1"
	TypeReport         = "dev.rein.report.v1"
	TypeDeadLetter     = "dev.rein.deadletter.v1"
	TypeHandoffTimeout = "dev.rein.handoff.timeout.v1"
	TypeUnanswered     = "dev.rein.unanswered.v1"
	TypeRedrive        = "dev.rein.redrive.v1"
	TypeRelease        = "dev.rein.release.v1"
	TypeFeedback       = "dev.rein.feedback.v1"
)

// Reasons a user turn ends with no agent reply (dev.rein.unanswered.v1).
const (
	// UnansweredSuperseded: a later turn of the conversation ran first (an
	// earlier turn held past the order gate's bound after a crash); the
	// user has moved on, so the older turn is not answered.
	UnansweredSuperseded = "superseded"
	// UnansweredFailed: the turn failed for good (its task is in the
	// dead-letter stream, with the cause).
	UnansweredFailed = "failed"
	// UnansweredHumanPath: the conversation was handed to a human (at
	// Unanswered.EscalatedTurn) and not given back: the agent does not
	// answer its later turns, each of which gets this record, so a
	// platform and the handoff desk see every turn the human has to answer.
	UnansweredHumanPath = "human_path"
)

// Reasons a conversation handed to a human is given back to the agent
// (dev.rein.release.v1).
const (
	// ReleaseOperator: an operator released it (rein handoff release).
	ReleaseOperator = "operator"
	// ReleaseQuietPeriod: it was handed over agent_unavailable and the
	// agent worker's quiet period passed with no such failure.
	ReleaseQuietPeriod = "quiet_period"
)

// CloudEvents extension attribute names carried by every rein event.
const (
	ExtTenant       = "tenant"
	ExtConversation = "conversation"
	ExtTurn         = "turn"
	ExtTraceparent  = "traceparent"
	ExtPartitionKey = "partitionkey"
)

// DataContentType is the content type of every rein payload.
const DataContentType = "application/json"

// Roles of a dialogue turn.
const (
	RoleUser  = "user"
	RoleAgent = "agent"
)

// Step kinds of the agent's internal context.
const (
	StepThink      = "think"
	StepToolCall   = "tool_call"
	StepToolResult = "tool_result"
	StepReply      = "reply"
)

// Error categories of the taxonomy.
const (
	CategoryAmbiguous   = "ambiguous"
	CategoryUnsupported = "unsupported"
)

// Recovery tool names.
const (
	ToolThink           = "think"
	ToolAmbiguityReport = "ambiguity_report"
	ToolTransfer        = "transfer_to_human_agents"
)

// AllTypes lists every event type with a JSON Schema, in catalogue order.
var AllTypes = []string{
	TypeTurn, TypeDetection, TypeTask, TypeStep, TypeSteps, TypeEscalation, TypeReport, TypeDeadLetter, TypeHandoffTimeout,
	TypeUnanswered, TypeRedrive, TypeRelease, TypeFeedback, TypeLabel,
}

// Plain JSON documents (not CloudEvents) with a JSON Schema of their own.
const (
	// DocSidecarAnswer is the reply to a sidecar request on
	// rein.inception.get.<tenant>.<conversation>.<turn>.
	DocSidecarAnswer = "rein.sidecar.answer.v1"
	// DocHandoffItem is a human-handoff work item on rein.handoff.items.>.
	DocHandoffItem = "rein.handoff.item.v1"
)

// AllDocuments lists the plain JSON documents with a JSON Schema; Validate
// takes their names as it takes event types, Known does not.
var AllDocuments = []string{DocSidecarAnswer, DocHandoffItem}
