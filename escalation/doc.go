// Package escalation is rein's last stage: it delivers the agent's
// escalations (dev.rein.escalation.v1) and ambiguity reports
// (dev.rein.report.v1) to the sinks configured in rein.yaml.
//
// Consumes: REIN_OUTCOMES, rein.escalations.<tenant>.<conv> and
// rein.reports.<tenant>.<conv>, durable "escalation" (Config.ConsumerConfig).
// Produces: handoff items on REIN_HANDOFF rein.handoff.items.<tenant>.<conv>
// and dev.rein.handoff.timeout.v1 on rein.handoff.timeout.<tenant>.<conv>
// (both through streams.Publisher); dead letters on rein.dlq.escalation
// (through the consumer) for events a sink gave up on.
//
// Exports: Config (a list of SinkConfig, defaults applied by Validate),
// Deps, New, Stage.Run; BuildSinks and the sinks themselves. Each SinkConfig
// holds exactly one typed configuration, its kind; rein.yaml keeps the flat
// `- type: <kind>` entries. Every sink instance has a unique name (`name:`,
// default <kind>, <kind>-2, … in configuration order) and gets every event,
// with its own retries and metrics:
//
//   - webhook (WebhookConfig, NewWebhook): CloudEvents over HTTP through
//     sdk-go's HTTP protocol, structured or binary mode, signed with
//     HMAC-SHA256 over "<unix seconds>.<body>" in the Rein-Signature header
//     (receivers check it with VerifySignature; secrets are at least
//     MinSecretBytes), the event id repeated as Idempotency-Key, retried
//     with exponential backoff; after the last attempt Deliver returns an
//     error wrapping ErrDeliveryFailed, which the stage dead-letters.
//     Redirects are never followed (a 3xx is a permanent failure), response
//     bodies are read up to max_response_bytes, and URL query values,
//     static header values and the secret are redacted from errors, logs
//     and dead-letter reasons.
//   - jsonl (JSONLConfig, NewJSONL): an append-only audit file, one
//     structured CloudEvent per line, fsynced per batch (Flush) and on an
//     interval, rotated by size to <path>.1, <path>.2 …, with a torn final
//     line cut off on reopen; jsonl_files.go reads and repairs such files
//     (ReadAuditFiles, RepairAuditFile).
//   - handoff (HandoffConfig, NewHandoff; at most one): work items on the
//     work-queue stream REIN_HANDOFF holding the transcript so far, the
//     detected error type, the planted plan and the summary; desktops take
//     them with Claim. An item unclaimed at its deadline is removed and a
//     timeout event published instead. EnsureHandoffStream provisions the
//     stream and the desktops' durable consumer.
//
// Metrics (NewMetrics, injected registerer): rein_escalations_total{reason,
// error_type}, rein_reports_total{error_type},
// rein_sink_deliveries_total{sink,kind,outcome} (sink: the configured name;
// kind: webhook, jsonl, handoff; outcome: delivered, retry, failed,
// skipped), rein_sink_delivery_seconds{sink,kind},
// rein_handoff_timeouts_total; the Publisher counts
// rein_published_total{stream="REIN_HANDOFF"}.
package escalation
