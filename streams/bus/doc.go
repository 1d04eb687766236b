// Package bus names everything rein puts on NATS, in one file (names.go):
// streams, the subjects each stores and the functions that build a
// conversation's subject, durable consumers and stage names, KV buckets
// and their keys, headers, and the inboxes tenant identities read replies
// on. Nothing else in the code base spells a name out; the permission
// table (streams/natsserver) and provisioning are built from these names
// only. It imports nothing of rein's, consumes and produces nothing.
//
// # Streams
//
//	REIN_TURNS       rein.turns.<tenant>.<conv>.user|agent       the surface dialogue
//	REIN_DETECTIONS  rein.detections.<tenant>.<conv>             every decision
//	REIN_TASKS       rein.tasks.<tenant>.<conv>                  agent work items
//	REIN_STEPS       rein.steps.<tenant>.<conv>                  the agent's internal steps
//	REIN_OUTCOMES    rein.escalations|reports|unanswered|releases.<tenant>.<conv>
//	REIN_DLQ         rein.dlq.<stage>                            dead letters
//	REIN_HANDOFF     rein.handoff.items|timeout.<tenant>.<conv>  (work queue)
//	REIN_LABELS      rein.labels.<tenant>.<conv>.<turn>.<labeller> operators' labels
//	REIN_FEEDBACK    rein.feedback.<tenant>.<conv>.<key>         platforms' feedback
//	REIN_REPLAY      <prefix>.<original subject>                 rein replay --to
//	KV REIN_CONVERSATIONS  <tenant>.<conv>   agent state, a record per write
//	KV REIN_MEMBERS        <stage>.<id>      live replicas of partitioned stages (partitions > 1)
//
// With partitions, turns, detections and tasks are stored under
// <subject>.<partition> (streams/partition.go); AnyPartition and
// SubjectsFor give readers both forms. Tenant traffic arrives on
// rein.ingest.<tenant>.<conv>.user|agent|feedback, which no stream
// captures: rein's ingest stores it under ids it derives.
package bus
