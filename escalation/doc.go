// Package escalation is rein's last stage: it delivers the agent's
// escalations (dev.rein.escalation.v1), ambiguity reports
// (dev.rein.report.v1) and the records of turns the agent did not answer
// (dev.rein.unanswered.v1) from REIN_OUTCOMES
// (rein.escalations.<tenant>.<conv>, rein.reports.<tenant>.<conv>,
// rein.unanswered.<tenant>.<conv>, durable "escalation") to every sink
// instance configured in rein.yaml (SinksConfig, BuildSinks; Config, Deps,
// New, Run like every stage):
//
//   - webhook (NewWebhook): CloudEvents over HTTP through sdk-go's HTTP
//     protocol, structured or binary mode, signed with HMAC-SHA256 over
//     "<unix seconds>.<body>" in the Rein-Signature header (receivers check
//     it with VerifySignature), the event id repeated as Idempotency-Key,
//     retried with exponential backoff; after the last attempt Deliver
//     returns an error wrapping ErrDeliveryFailed, which the stage
//     dead-letters.
//   - jsonl (NewJSONL): an append-only audit file, one structured CloudEvent
//     per line, fsynced per batch (Flush) and on an interval, rotated by size
//     to <path>.1, <path>.2 …, with a torn final line cut off on reopen.
//   - handoff (NewHandoff): work items on the work-queue stream REIN_HANDOFF
//     (rein.handoff.items.<tenant>.<conv>) holding the transcript so far, the
//     detected error type, the planted plan and the summary; desktops take
//     them with Claim. An item unclaimed at its deadline is removed and
//     dev.rein.handoff.timeout.v1 is published on
//     rein.handoff.timeout.<tenant>.<conv>. EnsureHandoffStream provisions
//     the stream and the desktops' durable consumer; the stage creates that
//     consumer at start when a handoff sink is configured, so desktops in
//     any language can claim (fetch, delete by sequence, ack: see
//     docs/integration.md).
//
// Metrics (NewMetrics, injected registerer): rein_escalations_total{reason,
// error_type}, rein_reports_total{error_type}, rein_sink_deliveries_total{sink,
// outcome} (outcome: delivered, retry, failed, skipped),
// rein_sink_delivery_seconds{sink}, rein_handoff_timeouts_total.
package escalation
