// Package agentworker is rein's agent stage: it runs the fixed task agent
// for every user turn, with the planted think step when the injector set
// one, and publishes what the agent said and did.
//
// Consumes: REIN_TASKS, subjects rein.tasks.<tenant>.<conv> (durable
// consumer "agentworker"), one dev.rein.task.v1 per user turn; a task
// without a turn number (from 1) is dead-lettered. With Deps.TaskKey, a
// task whose signature (schemas.TaskKey) is missing or wrong is never run:
// dead-lettered unverified_task, counted in
// rein_agentworker_unverified_tasks_total, nothing recorded for its turn.
//
// The request: the fixed system prompt (Config.SystemPrompt or
// SystemPromptFile; for the τ-bench domains their policy document; rein
// never alters it); the tools: the backend's tools plus, when missing,
// think(thought), ambiguity_report(report) and
// transfer_to_human_agents(summary); the internal context: earlier turns
// with their tool calls and results, the new user message, then — when the
// task carries an inception block — an assistant call think(thought) and
// its empty tool result. Loop: model → tool calls → results → … until a
// text reply, at most Config.MaxSteps model calls (default 30).
//
// Produces:
//   - the reply as dev.rein.turn.v1 (role agent) on
//     rein.turns.<tenant>.<conv>.agent, id turn.<tenant>.<conv>.<turn>-agent;
//   - every step as dev.rein.step.v1 on rein.steps.<tenant>.<conv>, id
//     step.<tenant>.<conv>.<turn>.<n> (n from 1; the planted think is
//     step 1 with injected: true; think calls are one step of kind think,
//     other calls a tool_call and a tool_result step, the reply a reply step);
//     with Config.StepEvents "turn", a turn that ends before
//     LiveStepsAfter publishes them instead as one dev.rein.steps.v1 on the
//     same subject, id steps.<tenant>.<conv>.<turn> (a turn that runs longer
//     publishes single steps as it goes, to its end; State.LiveSteps,
//     stored before the first of them, keeps a resumed turn to that choice);
//   - transfer_to_human_agents as dev.rein.escalation.v1 (reason
//     transfer_to_human_agents) on rein.escalations.<tenant>.<conv>, id
//     escalation.<tenant>.<conv>.<turn>; the conversation then belongs to
//     the human path: its later user turns never reach the model (State
//     records them in HumanTurns), each ends with dev.rein.unanswered.v1
//     reason human_path on rein.unanswered.<tenant>.<conv>, id
//     unanswered.<tenant>.<conv>.<turn>, until the conversation is
//     released (release.go): dev.rein.release.v1 on
//     rein.releases.<tenant>.<conv>, id release.<tenant>.<conv>.<turn of
//     the handoff>, stored by an operator (Release, `rein handoff
//     release`) or by the stage itself for an agent_unavailable handoff
//     past Config.QuietPeriod; the agent answers the next user turn;
//   - reaching MaxSteps as an escalation with reason max_steps and the
//     reply Config.MaxStepsReply;
//   - ambiguity_report as dev.rein.report.v1 on rein.reports.<tenant>.<conv>,
//     id report.<tenant>.<conv>.<turn>-<step>.
//
// Tool backends (Config.Backend): "domain", the built-in τ-bench airline or
// retail domain (package taubench) over a data directory or the embedded
// sample data, one copy-on-write session per conversation; "http", each
// call POSTed as JSON to a URL with Idempotency-Key
// <tenant>.<conv>/<turn>/<step>, per-attempt timeouts and retries on 5xx
// (see HTTPConfig); "none", sidecar mode: the platform runs its own agent
// and this stage consumes nothing.
//
// Crash safety: a conversation's State (internal context, the backend's
// overlay, status, progress within the current turn) lives in memory (one
// writer per conversation, guaranteed by the consume loop; a bounded cache
// with an idle TTL) and is written to the KV bucket REIN_CONVERSATIONS
// turn by turn — each write appends a record under the key <tenant>.<conv>
// holding the current turn's messages, the conversation's status and, once
// it differs from a new one, the backend's overlay, so a write costs one
// turn, not the whole conversation; the bucket keeps 64 values per key and
// every 32nd record is a snapshot of the whole context (so is a write
// when the newest whole context is older than half the bucket's max age,
// kv_ttl, which expires records one by one), so the newest snapshot and
// its followers rebuild the State (a cache miss decodes only the newest
// record of each turn since, following each record's link to the one it
// continues) — with a concurrency check
// on the key (a stale replica is refused and reloads) after every tool
// result that changed the backend's state (for the built-in domains, a
// call that wrote to the overlay: taubench.Session.Writes moved; a result
// that changed nothing is written with the next write, so a turn cut
// short after it asks the model again) and at the end of the turn
// (Config.Persist "turn" writes only at the end of
// the turn, for the built-in domains, re-running a turn cut short from the
// overlay stored before it); with an external backend every result is
// written, and the model's decision
// is also written before the call runs. Every output is derived from the
// State with a deterministic id, and is published after the State holding
// it is stored. So a redelivered task resumes where the stored State stopped and
// never applies a tool call with side effects twice (a domain call whose
// result was not stored re-runs on the overlay from before it; an HTTP call
// re-runs with the same idempotency key). What of a task's outputs is
// stored is answered in one place, the stage's ConsumerConfig.Stored
// (Stage.stored), which the consume loop asks for a task delivered again
// or stored longer ago than Config.RecheckAfter (half of REIN_TURNS'
// duplicate window: a durable created anew replays REIN_TASKS from its
// start), and the order gate for a held task's predecessor after a
// fail-over. The State (this worker's, else the stored one) decides: a
// turn it finished has all its outputs stored when the last event on each
// of its subjects (one direct get each: a turn's outputs on one subject
// are stored in the order published) is its own or a later turn's — the
// task is then acked unhandled — and some otherwise, which the handler
// publishes again (duplicates dropped by Nats-Msg-Id within the window;
// while they cannot be stored, even past every retry, the task goes back
// for redelivery instead of to the dead letters). A worker that did not
// publish a finished turn itself asks the same question before
// publishing. A turn the State does not know of (expired) counts as
// stored when the conversation's last reply is of it or a later turn, or,
// with no State left, when an escalation is stored (a human's turns never
// reach the model).
//
// Metrics: rein_agentworker_turns_total{outcome} (reply, escalated, max_steps,
// human_path, agent_unavailable, failed, superseded),
// rein_agentworker_releases_total{reason} (operator, quiet_period),
// rein_agentworker_turn_seconds, rein_agentworker_tool_calls_total{tool,outcome}
// (tool: a declared tool name or "_unknown"; outcome ok, error, failed).
// The consume loop adds rein_stage_messages_total{stage="agentworker",...}.
//
// Exports: Config, HTTPConfig, Deps, New, (*Stage).Run, Release, Backend,
// Conversation, ToolCall, DomainBackend, HTTPBackend, State, RecoveryTools.
package agentworker
