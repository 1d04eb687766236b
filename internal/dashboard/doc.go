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
// rein_detector_activations_total{tenant,error_type} for the activation
// rate (activated decisions / all decisions) overall, per error type and per
// tenant, and decisions by outcome; rein_consumer_pending_messages,
// rein_consumer_ack_pending_messages and rein_consumer_max_ack_pending for
// consumer lag; rein_stream_messages{stream="REIN_DLQ"} for the dead-letter
// count. When the gatherer has no JetStream state (no JetStream collector
// registered), lag and dead letters are read from JetStream directly.
//
// From JetStream, through ordered consumers that leave no state behind
// (streams.ReadStream): the tail of REIN_OUTCOMES (recent escalations and
// reports), and for the conversation view every event of one conversation
// in REIN_TURNS, REIN_DETECTIONS, REIN_TASKS (a task with an inception is a
// planted thought), REIN_STEPS and REIN_OUTCOMES.
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
