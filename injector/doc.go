// Package injector is rein's injector stage: it turns every detection into
// exactly one agent task, carrying the inception block when the inception
// module found a known error.
//
// Consumes: REIN_DETECTIONS, subjects rein.detections.<tenant>.<conv>
// (durable consumer "injector"), one dev.rein.detection.v1 per user turn;
// a detection without a turn number (from 1) is dead-lettered.
//
// Produces: one dev.rein.task.v1 per user turn on rein.tasks.<tenant>.<conv>
// (stream REIN_TASKS) with the deterministic id task.<tenant>.<conv>.<turn>,
// published as Nats-Msg-Id, so a redelivered detection yields no second
// task, and signed with Deps.TaskKey (extension reinsig, see
// schemas.TaskKey) so that the agent worker runs only rein's own tasks. When the detection activated (rein=true, not failed) the task's
// inception is {thought: the detection's reasoning, error_type,
// recovery_tool}: the agent worker plants it as an assistant tool call
// think(thought) with an empty tool result, after the user message and
// before the agent's first sampling. Otherwise inception is null and the
// turn runs exactly as without rein (fail-open); so too for a detection of
// a conversation in a holdout experiment's control arm (arm "control"),
// judged but not acted on, and the sidecar answers none for it.
//
// Fused (Config.Fused): when the detector runs in the same process, cmd/rein
// hands it Stage.Task, so each task is built here but published by the
// detector together with its detection; the stage then creates no consumer
// (one delivery, ack and decode fewer per turn) and runs only the sidecar
// responder. Tasks, ids and metrics are the same. A durable "injector" made
// by an earlier unfused run is left as it was; one created later, when the
// stages run apart again, reads REIN_DETECTIONS from its start. Past the
// task stream's duplicate window a task id no longer protects, so the
// unfused stage checks a detection older than Config.RecheckAfter (default
// half of REIN_TASKS' duplicate window) against the conversation's last
// stored task (one direct get) and publishes nothing when that task is of
// the same turn or a later one.
//
// Sidecar mode (Config.Sidecar): for platforms that run their own agent,
// a NATS request/reply responder in queue group Config.QueueGroup on
// rein.inception.get.<tenant>.<conv>.<turn> answers the JSON Answer
// {"status": "ready"|"none"|"timeout"|"busy"|"invalid", "inception": {...}|null,
// "detection_id": ..., "turn": n}. It reads the conversation's stored
// detection (direct get of the subject's last message, a scan for an
// earlier turn) and, when the turn's detection has not arrived yet, watches
// the detection subject for up to Config.SidecarWait (default 2s) before
// answering "timeout". Ask is the client side. Platforms may instead consume
// rein.tasks.> themselves.
//
// Metrics: rein_injector_injections_total{error_type} counts tasks published
// with an inception block (error_type bounded to 64 values, then "_other";
// a redelivered detection may count twice though it publishes one task).
// The consume loop adds rein_stage_messages_total{stage="injector",...}.
//
// Exports: Config, Deps, New, (*Stage).Run, (*Stage).Task, (*Stage).TaskStored, Inception, TaskFor, Answer,
// Ask, ParseInceptionSubject.
package injector
