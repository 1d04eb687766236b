// Package escalation is rein's last stage: it delivers the agent's
// escalations (dev.rein.escalation.v1), ambiguity reports
// (dev.rein.report.v1), the records of turns the agent did not answer
// (dev.rein.unanswered.v1) and the releases of conversations handed to a
// human (dev.rein.release.v1) to every sink instance configured in
// rein.yaml.
//
// Consumes: REIN_OUTCOMES, rein.escalations.<tenant>.<conv>,
// rein.reports.<tenant>.<conv>, rein.unanswered.<tenant>.<conv> and
// rein.releases.<tenant>.<conv>, durable "escalation"
// (Stage.ConsumerConfig). Reads a handed-over conversation's transcript
// from REIN_TURNS with batched direct gets (streams.ReadConversationTurns).
// Produces: handoff items on REIN_HANDOFF rein.handoff.items.<tenant>.<conv>
// and dev.rein.handoff.timeout.v1 on rein.handoff.timeout.<tenant>.<conv>
// (both through streams.Publisher); dead letters on rein.dlq.escalation
// (through the consumer) for events a sink gave up on.
//
// Config, Deps, New and Run like every stage; SinksConfig, BuildSinks and
// the sinks themselves for other callers. Each SinkConfig holds exactly one
// typed configuration, its kind; rein.yaml keeps flat `- type: <kind>`
// entries, and a key that is not one of that kind's is refused by name.
// Every sink instance has a unique name (`name:`, default <kind> for the
// first of a kind and <kind>-<n> for the n-th) and gets every event, with
// its own retries and metrics:
//
//   - webhook (WebhookConfig, NewWebhook): CloudEvents over HTTP through
//     sdk-go's HTTP protocol, structured or binary mode, signed with
//     HMAC-SHA256 over "<unix seconds>.<body>" in the Rein-Signature header
//     (receivers check it with VerifySignature; a configured secret has at
//     least MinSecretBytes), the event id repeated as Idempotency-Key,
//     retried with exponential backoff; after the last attempt Deliver
//     returns an error wrapping ErrDeliveryFailed, which the stage
//     dead-letters. Redirects are never followed (a 3xx is a permanent
//     failure); a receiver's answer is read up to max_response_bytes
//     (ErrResponseTooLarge past it); the URL's query values and password,
//     the static header values and the secret are redacted from errors,
//     logs and dead-letter reasons.
//   - jsonl (JSONLConfig, NewJSONL): an append-only audit file, one
//     structured CloudEvent per line, fsynced per batch (Flush) and on an
//     interval, rotated by size to <path>.1, <path>.2 …, with a torn final
//     line cut off on reopen (ReadAuditFiles, RepairAuditFile).
//   - handoff (HandoffConfig, NewHandoff; at most one): work items on the
//     work-queue stream REIN_HANDOFF holding the transcript so far, the
//     detected error type, the planted plan and the summary (and one per
//     human_path record: the user wrote again after the handoff); desktops take
//     them with Claim. An item unclaimed at its deadline is removed and
//     dev.rein.handoff.timeout.v1 is published on
//     rein.handoff.timeout.<tenant>.<conv>. EnsureHandoffStream provisions
//     the stream and the desktops' durable consumer; the stage creates that
//     consumer at start when a handoff sink is configured, so desktops in
//     any language can claim (fetch, delete by sequence, ack: see
//     docs/integration.md).
//
// Metrics (NewMetrics, injected registerer): rein_escalations_total{reason,
// error_type}, rein_reports_total{error_type},
// rein_unanswered_total{reason} (superseded, failed, human_path),
// rein_sink_deliveries_total{sink,kind,outcome} (sink: the instance name;
// kind: webhook, jsonl or handoff; outcome: delivered, retry, failed,
// skipped), rein_sink_delivery_seconds{sink,kind},
// rein_handoff_timeouts_total; the Publisher counts the handoff's
// rein_published_total{stream="REIN_HANDOFF"}.
package escalation
