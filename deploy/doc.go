// Package deploy holds rein's deployment artefacts and the tests that keep
// them honest. It has no Go API and consumes, produces and exports nothing
// at run time.
//
//   - prometheus/rules.yml: recording rules (activation ratio overall, per
//     error type and per tenant; decision and failure rates; a 7-day
//     baseline) and alerts (inception failure rate, a consumer whose backlog
//     grows or whose ack-pending sits at max_ack_pending, dead letters,
//     webhook delivery failures and retries, handoff timeouts, an activation
//     ratio far off its 7-day level), unit-tested by rules_test.yml and
//     rules_anomaly_test.yml with `promtool test rules`.
//   - grafana/rein.json: the Grafana dashboard (activation by error type,
//     decisions by outcome, inception latency p50/p99, escalations and
//     reports, sinks, model tokens, consumer lag, dead letters).
//
// The tests check that every rein_* metric the dashboard and the rules
// query is one rein exports (internal/telemetry/names.go), that the
// dashboard is well formed and its queries parse, and run promtool when it
// is installed; with REIN_REQUIRE_PROMTOOL=1 (set by .ci/run) or CI set, a
// missing promtool fails those tests instead of skipping them.
package deploy
