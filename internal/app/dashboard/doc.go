// Package dashboard is rein's built-in dashboard page, for operators
// without Grafana. It is server-rendered HTML (html/template, every user
// text escaped) with an embedded stylesheet and a small embedded script; it
// loads nothing from outside rein's HTTP port, so it works offline, and a
// Content-Security-Policy header keeps it that way.
//
// # Routes (mounted by Register)
//
//	GET /{$}                                overview page
//	GET /conversations/{tenant}/{conv}      one conversation's timeline
//	GET /api/overview                       the overview as JSON (the page polls it)
//	GET /api/conversations/{tenant}/{conv}  the timeline as JSON
//	GET /assets/{file}                      the embedded stylesheet and script
//
// # What it reads
//
// From the process's prometheus.Gatherer (the registry /metrics serves):
// rein_detector_decisions_total{tenant,outcome} and
// rein_detector_activations_total{tenant,error_type}, for the activation
// rate (activated decisions / all decisions) overall, per error type and per
// tenant, and decisions by outcome.
//
// From JetStream: every durable consumer's pending, ack-pending and
// ack-pending limit (the values rein_consumer_pending_messages and
// rein_consumer_ack_pending_messages export; ephemeral consumers are left
// out), the number of messages in REIN_DLQ (dead letters), and the tail of
// REIN_OUTCOMES (recent escalations and reports), fetched incrementally by
// sequence so that polling leaves no consumer behind. The conversation view
// reads every event of one conversation in REIN_TURNS, REIN_DETECTIONS,
// REIN_TASKS (a task with an inception is a planted thought), REIN_STEPS and
// REIN_OUTCOMES through ordered consumers (streams.ReadStream).
//
// It produces nothing and exports no metrics.
//
// # Stable hooks for tests
//
// Numbers carry data-testid attributes (activation-rate, decisions-total,
// activated-count, dead-letters, updated-at); table rows carry
// data-outcome, data-error-type, data-tenant and data-consumer; timeline
// entries carry class "event <kind>" (user-turn, agent-turn, detection,
// planted-thought, task, step, escalation, report) with data-kind and
// data-turn, and an injected think step also has class "injected".
package dashboard
