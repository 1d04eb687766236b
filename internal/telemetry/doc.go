// Package telemetry holds what every rein process shares for observability:
// the one Prometheus registry per process (no global registry), the HTTP
// server with /metrics, /healthz, /readyz and the dashboard page, structured
// JSON logging with log/slog, a JetStream state collector, and the name of
// every metric rein exports (names.go). It consumes stream and consumer
// state from JetStream at scrape time and produces nothing on NATS.
//
// The HTTP port is a trust boundary (server.go, tokens.go, ratelimit.go):
// bearer tokens from a tokens file (by SHA-256) or the generated local token
// (<data dir>/http-token, 0600) name a Principal with roles (ingress,
// dashboard, metrics, operator) and tenants; routes check the role
// (HandleRole), the dashboard the tenant of its path, the ingress the
// tenant of each turn (PrincipalFrom). A non-loopback address without
// tokens is refused unless Insecure. The Host header must be an IP literal,
// localhost, the listen host or an allowed name (421 otherwise: DNS
// rebinding). Read-header, read, write and idle timeouts and a cap on open
// connections bound slow clients; TenantLimiter is a bounded set of
// per-tenant token buckets (429 with Retry-After). /healthz and /readyz
// are always open; /metrics is open when MetricsOpen (loopback default).
//
// Metrics exported here: rein_stream_messages{stream},
// rein_stream_bytes{stream}, rein_consumer_pending_messages{stream,consumer},
// rein_consumer_ack_pending_messages{stream,consumer},
// rein_consumer_max_ack_pending{stream,consumer},
// rein_consumer_redelivered_messages{stream,consumer}, plus the Go and
// process collectors.
package telemetry
