// Package injector is rein's injector: a library that turns a detection
// into its user turn's agent task, and the sidecar responder. It consumes
// no stream: the detector stores each detection with its task in one batch
// (REIN_DETECTIONS stays the audit record of every decision).
//
// Tasks (task.go): Tasks.Task builds one dev.rein.task.v1 for a detection
// on rein.tasks.<tenant>.<conv> (stream REIN_TASKS) with the deterministic
// id task.<tenant>.<conv>.<turn>, published as Nats-Msg-Id, signed with
// the task key (extension reinsig, see schemas.TaskKey) so that the agent
// worker runs only rein's own tasks. When the detection activated
// (rein=true, not failed, with an error type and reasoning) the task's
// inception is {thought: the detection's reasoning, error_type,
// recovery_tool} (TaskFor, Inception: pure functions); the agent worker
// plants it as an assistant tool call think(thought) with an empty tool
// result, after the user message and before the agent's first sampling.
// Otherwise inception is null and the turn runs exactly as without rein
// (fail-open); so too for a detection of a conversation in a holdout
// experiment's control arm (arm "control"), judged but not acted on, and
// the sidecar answers none for it. A detection without a turn number
// (from 1) has no task.
//
// Sidecar (sidecar.go): for platforms that run their own agent, a NATS
// request/reply responder in queue group SidecarConfig.QueueGroup on
// rein.inception.get.<tenant>.<conv>.<turn> answers the JSON Answer
// {"status": "ready"|"none"|"timeout"|"busy"|"invalid", "inception": {...}|null,
// "detection_id": ..., "turn": n}. It reads the conversation's stored
// detection (direct get of the subject's last message, a scan for an
// earlier turn) and, when the turn's detection has not arrived yet, watches
// the detection subject for up to SidecarConfig.Wait (default 2s) before
// answering "timeout". Ask is the client side. Platforms may instead
// consume rein.tasks.> themselves. `rein serve --stages injector` runs it.
//
// Metrics: rein_injector_injections_total{error_type} counts tasks stored
// with an inception block (counted when the caller reports the task
// stored; error_type bounded to 64 values, then "_other").
//
// Exports: Tasks, NewTasks, TaskFor, Inception, RecoveryTools,
// DefaultRecoveryTools, Sidecar, SidecarConfig, NewSidecar, Answer, Ask,
// ParseInceptionSubject, the Status* answers, ErrInvalidConfig,
// ErrBadRequest.
package injector
