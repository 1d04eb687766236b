package bus

import (
	"strconv"
)

// This file names every NATS stream, subject, durable consumer, KV bucket and
// header rein uses. Nothing else in the code base spells one out.

// Streams.
const (
	StreamTurns      = "REIN_TURNS"
	StreamDetections = "REIN_DETECTIONS"
	StreamTasks      = "REIN_TASKS"
	StreamSteps      = "REIN_STEPS"
	StreamOutcomes   = "REIN_OUTCOMES"
	StreamDLQ        = "REIN_DLQ"
	StreamHandoff    = "REIN_HANDOFF"
	// StreamReplay holds `rein replay --to PREFIX` re-publications, under
	// PREFIX.<original subject>, never on live subjects.
	StreamReplay = "REIN_REPLAY"
	// StreamLabels holds operators' labels of detections (dev.rein.label.v1).
	StreamLabels = "REIN_LABELS"
	// StreamFeedback holds platforms' dev.rein.feedback.v1, one per
	// conversation and kind (feedback.go).
	StreamFeedback = "REIN_FEEDBACK"
)

// KV buckets, and the stream JetStream keeps each in.
const (
	BucketConversations = "REIN_CONVERSATIONS"
	StreamConversations = "KV_" + BucketConversations
	// BucketMembers holds the live replicas of partitioned stages, one
	// key each (MemberKey); it exists when streams.partitions > 1.
	BucketMembers = "REIN_MEMBERS"
	StreamMembers = "KV_" + BucketMembers
)

// MemberKey is a stage replica's key in the members bucket: <stage>.<id>.
func MemberKey(stage, id string) string { return stage + "." + id }

// Subject roots; the full subjects are built by the functions below.
const (
	subjTurns       = "rein.turns"
	subjDetections  = "rein.detections"
	subjTasks       = "rein.tasks"
	subjSteps       = "rein.steps"
	subjEscalations = "rein.escalations"
	subjReports     = "rein.reports"
	subjUnanswered  = "rein.unanswered"
	subjReleases    = "rein.releases"
	subjDLQ         = "rein.dlq"
	subjHandoff     = "rein.handoff"
	subjHandoffTO   = "rein.handoff.timeout"
	subjInception   = "rein.inception.get"
	subjIngest      = "rein.ingest"
	subjLabels      = "rein.labels"
	subjFeedback    = "rein.feedback"
)

// Stream subject filters (what each stream stores).
const (
	TurnsAll      = subjTurns + ".>"
	UserTurnsAll  = subjTurns + ".*.*.user"
	AgentTurnsAll = subjTurns + ".*.*.agent"
	DetectionsAll = subjDetections + ".>"
	TasksAll      = subjTasks + ".>"
	// TasksEach is the agent worker's consumer filter: every
	// conversation's subject, to which a partition token can be added.
	TasksEach      = subjTasks + ".*.*"
	StepsAll       = subjSteps + ".>"
	EscalationsAll = subjEscalations + ".>"
	ReportsAll     = subjReports + ".>"
	UnansweredAll  = subjUnanswered + ".>"
	ReleasesAll    = subjReleases + ".>"
	DLQAll         = subjDLQ + ".>"
	HandoffItems   = subjHandoff + ".items.>"
	HandoffTimeout = subjHandoffTO + ".>"
	InceptionAll   = subjInception + ".>"
	LabelsAll      = subjLabels + ".>"
	FeedbackAll    = subjFeedback + ".>"
)

// IngestFeedback is the last token of the ingest subject of a feedback
// event: rein.ingest.<tenant>.<conv>.feedback.
const IngestFeedback = "feedback"

// FeedbackSubject is rein.feedback.<tenant>.<conv>.<key>, key being the
// feedback's schemas.Feedback.Key: one subject per conversation and kind.
func FeedbackSubject(tenant, conv, key string) string {
	return subjFeedback + "." + tenant + "." + conv + "." + key
}

// IngestAll is what the NATS ingest listens on:
// rein.ingest.<tenant>.<conv>.<role>. No stream captures it; rein's ingress
// decodes, checks and stores each turn under the id it derives (ingest.go).
const IngestAll = subjIngest + ".*.*.*"

// QueueIngest is the queue group of the NATS ingest's subscribers: each
// offered turn is stored by one of them.
const QueueIngest = "rein-ingest"

// InboxPrefix is where NATS clients receive replies (their requests'
// answers); the ingest answers nowhere else.
const InboxPrefix = "_INBOX."

// TenantInbox is the inbox prefix a tenant's identity must connect with
// (nats.go CustomInboxPrefix, nats-py inbox_prefix, the nats CLI's
// --inbox-prefix): its replies arrive under TenantInbox(T).>, the only
// inboxes it may read, so no tenant reads another's acks or inception
// blocks. It stays under InboxPrefix; rein's own inboxes are a 22-letter
// nuid there, never "tenant".
func TenantInbox(tenant string) string { return InboxPrefix + "tenant." + tenant }

// IngestSubject is rein.ingest.<tenant>.<conv>.<role>: where a platform
// sends a turn over NATS (a request; the answer is a JetStream-style ack).
func IngestSubject(tenant, conv, role string) string {
	return subjIngest + "." + tenant + "." + conv + "." + role
}

// TenantIngest is the ingest subject of one tenant's turns of role.
func TenantIngest(tenant, role string) string { return subjIngest + "." + tenant + ".*." + role }

// TurnSubject is rein.turns.<tenant>.<conv>.<role>.
func TurnSubject(tenant, conv, role string) string {
	return subjTurns + "." + tenant + "." + conv + "." + role
}

// ConversationTurns is the filter of every turn of one conversation, as
// stored with or without a partition token.
func ConversationTurns(tenant, conv string) string {
	return subjTurns + "." + tenant + "." + conv + ".>"
}

// DetectionSubject is rein.detections.<tenant>.<conv>.
func DetectionSubject(tenant, conv string) string { return subjDetections + "." + tenant + "." + conv }

// TaskSubject is rein.tasks.<tenant>.<conv>.
func TaskSubject(tenant, conv string) string { return subjTasks + "." + tenant + "." + conv }

// StepSubject is rein.steps.<tenant>.<conv>.
func StepSubject(tenant, conv string) string { return subjSteps + "." + tenant + "." + conv }

// EscalationSubject is rein.escalations.<tenant>.<conv>.
func EscalationSubject(tenant, conv string) string {
	return subjEscalations + "." + tenant + "." + conv
}

// ReportSubject is rein.reports.<tenant>.<conv>.
func ReportSubject(tenant, conv string) string { return subjReports + "." + tenant + "." + conv }

// TenantAll is every rein subject of one tenant, rein.*.<tenant>.> (the
// demo follows its conversations with it).
func TenantAll(tenant string) string { return "rein.*." + tenant + ".>" }

// UnansweredSubject is rein.unanswered.<tenant>.<conv>: the explicit
// outcome of a user turn that gets no reply (dev.rein.unanswered.v1).
func UnansweredSubject(tenant, conv string) string {
	return subjUnanswered + "." + tenant + "." + conv
}

// ReleaseSubject is rein.releases.<tenant>.<conv>: a conversation handed
// to a human given back to the agent (dev.rein.release.v1).
func ReleaseSubject(tenant, conv string) string {
	return subjReleases + "." + tenant + "." + conv
}

// DLQSubject is rein.dlq.<stage>.
func DLQSubject(stage string) string { return subjDLQ + "." + stage }

// HandoffSubject is rein.handoff.items.<tenant>.<conv>.
func HandoffSubject(tenant, conv string) string { return subjHandoff + ".items." + tenant + "." + conv }

// HandoffTimeoutSubject is rein.handoff.timeout.<tenant>.<conv>.
func HandoffTimeoutSubject(tenant, conv string) string {
	return subjHandoffTO + "." + tenant + "." + conv
}

// TenantInception is every inception request subject of one tenant.
func TenantInception(tenant string) string { return subjInception + "." + tenant + ".>" }

// InceptionSubject is rein.inception.get.<tenant>.<conv>.<turn> (sidecar request/reply).
func InceptionSubject(tenant, conv, turn string) string {
	return subjInception + "." + tenant + "." + conv + "." + turn
}

// LabelSubject is rein.labels.<tenant>.<conv>.<turn>.<labeller>: one
// subject per turn and labeller, whose last label is the one that counts.
func LabelSubject(tenant, conv string, turn int, labeller string) string {
	return subjLabels + "." + tenant + "." + conv + "." + strconv.Itoa(turn) + "." + labeller
}

// SubjectsFor returns, for a stream name, the filter of one tenant (and
// conversation when conv is not empty). It is how replay and audit select.
func SubjectsFor(stream, tenant, conv string) []string {
	t, c := tenant, conv
	if t == "" {
		t = "*"
	}
	if c == "" {
		c = "*"
	}
	// Turns, detections and tasks may be stored with a partition token
	// (partition.go).
	switch stream {
	case StreamTurns:
		return []string{subjTurns + "." + t + "." + c + ".>"}
	case StreamDetections:
		return AnyPartition(subjDetections + "." + t + "." + c)
	case StreamTasks:
		return AnyPartition(subjTasks + "." + t + "." + c)
	case StreamSteps:
		return []string{subjSteps + "." + t + "." + c}
	case StreamOutcomes:
		return []string{subjEscalations + "." + t + "." + c, subjReports + "." + t + "." + c, subjUnanswered + "." + t + "." + c,
			subjReleases + "." + t + "." + c}
	case StreamHandoff:
		return []string{subjHandoff + ".items." + t + "." + c, subjHandoffTO + "." + t + "." + c}
	case StreamLabels:
		return []string{subjLabels + "." + t + "." + c + ".>"}
	case StreamFeedback:
		return []string{subjFeedback + "." + t + "." + c + ".*"}
	}
	return nil
}

// Durable consumer names, one per stage.
const (
	DurableDetector    = "detector"
	DurableInjector    = "injector" // retired: provisioning deletes it
	DurableAgentWorker = "agentworker"
	DurableEscalation  = "escalation"
	// DurableHandoffDesktops is the one durable pull consumer through which
	// human-agent desktops claim REIN_HANDOFF items.
	DurableHandoffDesktops = "handoff-desktops"
)

// Stage names (label values of rein_stage_* metrics and DLQ subjects).
const (
	StageIngress     = "ingress"
	StageDetector    = "detector"
	StageInjector    = "injector"
	StageAgentWorker = "agentworker"
	StageEscalation  = "escalation"
)

// Headers.
const (
	HeaderMsgID          = "Nats-Msg-Id"
	HeaderExpectedStream = "Nats-Expected-Stream"
	HeaderCEPrefix       = "ce-"
	HeaderContentType    = "content-type"
)

// ConversationKey names a conversation: <tenant>.<conv> (cache and
// partition key, and its key in the conversations bucket, under which the
// agent worker appends its state records).
func ConversationKey(tenant, conv string) string { return tenant + "." + conv }

// ConversationStateSubject is the subject, in the bucket's stream
// (StreamConversations), of a key of the conversations bucket.
func ConversationStateSubject(key string) string { return "$KV." + BucketConversations + "." + key }

// AnyPartition is the filters matching subject as stored in a stream with
// or without partitions, for readers that do not look the stream up
// (replay, audit). The two never overlap.
func AnyPartition(subject string) []string { return []string{subject, subject + ".*"} }
