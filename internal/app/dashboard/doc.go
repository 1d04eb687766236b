// Package dashboard is rein's built-in dashboard page, for operators
// without Grafana. It is server-rendered HTML (html/template, every user
// text escaped) with an embedded stylesheet and a small embedded script; it
// loads nothing from outside rein's HTTP port, so it works offline, and a
// Content-Security-Policy header keeps it that way.
//
// # Routes (mounted by Register)
//
//	GET /{$}?window=&tenant=&type=          overview page
//	GET /conversations/{tenant}/{conv}      one conversation's timeline
//	GET /search?q=<conv or tenant/conv>     opens the conversation (303), lists
//	                                        the tenants that have it, or 404
//	GET /api/overview?window=&tenant=&type= the overview as JSON (the page polls it)
//	GET /api/conversations/{tenant}/{conv}  the timeline as JSON
//	POST /conversations/{tenant}/{conv}/labels  the label form (operator
//	                                        role, same origin only): stores a
//	                                        dev.rein.label.v1, then 303 back
//	GET /experiments/{tenant}?experiment=&min_effect=
//	                                        a holdout experiment: the holdout
//	                                        in force (or killed) first, arms,
//	                                        outcomes with intervals and
//	                                        always-valid p-values, guard flags
//	GET /api/experiments/{tenant}           the same as JSON
//	GET /labels/{tenant}?day=&days=         the review queue of a day (default
//	                                        yesterday), what is left to label,
//	                                        and quality measured from labels
//	GET /api/labels/{tenant}                the same as JSON
//	GET /assets/{file}                      the embedded stylesheet and script
//
// # Windows, trend and filters
//
// window is 1m, 5m, 15m, 1h or all (the default: since the process
// started, what /metrics' counters say). The dashboard keeps samples of the
// counters (Run takes one every SampleInterval, each page load one more; at
// most one per half interval, for the longest window): a window's numbers
// are the counters now minus the sample at its start, or minus zero when
// the process is younger than the window (the page then says so). Each
// window has two sparklines, decisions and activation rate in twelve
// buckets. tenant narrows every number to one tenant; type makes
// "activated" count one error type (the headline rate, the tenant table,
// the sparkline, the recent outcomes), the error type table staying the
// menu of types. The headline decision counts and activation rate are this
// process's (what its detector decided, as its /metrics says); below the
// rate, "every replica" gives the same figures for the whole deployment,
// and the traffic table is the whole deployment's too (below).
//
// # Recent conversations and latency
//
// The ledger (below) also keeps each recent conversation's latest decision
// (at most 1,000, the newest 500 after a trim), so the overview lists the
// window's conversations, clean ones included, filtered by tenant, type and
// ?outcome= (recentconv.go). The latency table is p50 and p99 per stage,
// inception module, model purpose and agent turn over the window, from the
// registry's histograms as histogram_quantile computes them (latency.go).
//
// # Every replica's decisions
//
// Every detector stores its decision for each user turn in REIN_DETECTIONS,
// so the dashboard counts them there (data-testid="deployment", with
// .rate, .activated, .judged, .failed): a ledger reads what was stored
// since its last refresh (batched direct gets by sequence, no consumer; at
// most 20,000 per refresh, the page saying when it is still catching up),
// from an hour before the dashboard started, and counts them by tenant,
// outcome and error type in buckets of their stored time (5 s for the last
// 15 minutes, a minute for the hour; at most telemetry.MaxTenantLabels
// tenants, like the detector's metrics), so a window is whole from the
// first page and filters apply as above; "all" is since the dashboard
// started.
//
// # Traffic: the whole deployment
//
// The traffic table is read from the streams, not from process memory, so
// it counts what every replica of every stage stored: for each rein stream,
// the messages stored within the window (1m, 5m, 15m, 1h; "all" is since
// this dashboard started), their rate per second, a sparkline of twelve
// buckets and a direction (rising, falling, steady, idle: the later half of
// the buckets against the earlier). JetStream numbers every stored message
// and stamps its time, so a window's count is one direct get per boundary
// (the first sequence stored at or after it) — it reaches back its whole
// span whenever this process started. The consumer table adds each durable
// consumer's oldest pending message's age (its lag in time). StreamFlow and
// OldestPending are exported for rein streams.
//
// # Activation rate
//
// activated / judged decisions, where judged are those the module answered
// (activated or clear). A failed decision (the module erred or timed out
// and the turn went on without injection) judged nothing: it is left out of
// the denominator and shown as the failure rate (failed / all decisions).
//
// # Alarms
//
// A banner (role="alert", data-alarm) when REIN_DLQ holds more messages
// than at the start of AlarmWindow (1h; dead letters present when the
// dashboard started are not news), and for every model endpoint whose
// rein_model_available is 0 (its circuit breaker is open).
//
// # What it reads
//
// From the process's prometheus.Gatherer (the registry /metrics serves):
// rein_detector_decisions_total{tenant,outcome} and
// rein_detector_activations_total{tenant,error_type}, for the activation
// rate (activated / judged decisions) overall, per error type and per
// tenant, and decisions by outcome; rein_model_available{endpoint} for the
// alarm.
//
// From JetStream: every durable consumer's pending, ack-pending and
// ack-pending limit (the values rein_consumer_pending_messages and
// rein_consumer_ack_pending_messages export; ephemeral consumers are left
// out), the number of messages in REIN_DLQ (dead letters), and the tail of
// REIN_OUTCOMES (recent escalations and reports), fetched incrementally by
// sequence so that polling leaves no consumer behind. The conversation view
// reads every event of one conversation in REIN_TURNS, REIN_DETECTIONS,
// REIN_TASKS (a task with an inception is a planted thought), REIN_STEPS,
// REIN_OUTCOMES and REIN_LABELS through ordered consumers (streams.ReadStream). A search
// reads the subjects REIN_TURNS holds for the id (stream info with a
// subject filter), never the messages.
//
// # Labels
//
// A request Deps.CanLabel allows (the operator role; never open reads)
// gets, on each detection of the conversation page, a form to label it
// (internal/labels: correct, false activation, wrong type, missed error).
// The POST is behind the standard library's cross-origin protection
// (Sec-Fetch-Site, else Origin against Host), on top of the token
// cookie's SameSite=Strict, so another site cannot label through an
// operator's browser. The conversation view also reads REIN_LABELS and
// shows each label (its note redacted like other free text).
//
// The experiment page reads through Deps.Experiments (the pipeline wires
// audit.ExperimentConversations) and Deps.Holdout (the experiments file in
// force); its hooks are data-testid holdout, holdout-fraction, arms
// (rows data-arm), metrics-activated and metrics-all (rows data-metric,
// data-flag when flagged) and guard-flags.
//
// It produces dev.rein.label.v1 on rein.labels.<tenant>.<conv>.<turn>.<labeller>
// (REIN_LABELS) from the label form, nothing else, and exports no metrics.
//
// # Stable hooks for tests
//
// The traffic table is data-testid="flows", one row per stream with
// data-flow=<stream> and cells .messages, .rate, .trend (an svg.spark) and
// .direction; its coverage is data-testid="flow-coverage".
// Numbers carry data-testid attributes (activation-rate, decisions-total,
// judged-total, activated-count, failed-count, failure-rate, dead-letters,
// updated-at, coverage); the sparklines are svg.spark with data-testid
// trend-rate and trend-decisions; the window links carry data-window (the
// current one aria-current="page"); banners are .alarm with data-alarm in
// data-testid="alarms"; the search box is data-testid="search-input"; table rows carry
// data-outcome, data-error-type, data-tenant and data-consumer; timeline
// entries carry class "event <kind>" (user-turn, agent-turn, detection,
// planted-thought, task, step, escalation, report) with data-kind and
// data-turn, and an injected think step also has class "injected".
package dashboard
