// Package telemetry holds what every rein process shares for observability:
// the one Prometheus registry per process (no global registry), the HTTP
// server with /metrics, /healthz, /readyz and the dashboard page, structured
// JSON logging with log/slog, a JetStream state collector, and the name of
// every metric rein exports (names.go). It consumes stream and consumer
// state from JetStream at scrape time and produces nothing on NATS.
//
// /readyz is 503 until SetReady(true) and while a requirement registered
// with AddRequirement fails (rein registers NATS reachable and its streams
// having a leader); a failing AddCheck probe only marks it "degraded", 200.
//
// Metrics exported here: rein_stream_messages{stream},
// rein_stream_bytes{stream}, rein_consumer_pending_messages{stream,consumer},
// rein_consumer_ack_pending_messages{stream,consumer},
// rein_consumer_max_ack_pending{stream,consumer},
// rein_consumer_redelivered_messages{stream,consumer}, plus the Go and
// process collectors.
package telemetry
