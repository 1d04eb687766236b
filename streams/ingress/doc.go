// Package ingress accepts turns and feedback from outside rein: over HTTP,
// POST /v1/turns and /v1/feedback (CloudEvents HTTP binding, structured or
// binary mode; ingress.go, bearer tokens in ingress_auth.go), and over NATS
// on the tenant ingest subjects a tenant's ingress identity may publish to
// (ingest.go). Each offered event is checked (attributes, ids, the data's
// JSON Schema) before it is stored; a 400 names the bad field. Limits: a
// body size, a token bucket and a bound on requests in flight per tenant.
//
// Consumes: rein.ingest.<tenant>.<conv>.<role> (queue group).
// Produces: rein.turns.<tenant>.<conv>.<role> (dev.rein.turn.v1) and
// rein.feedback.<tenant>.<conv>.<key>, stored under ids rein derives
// (streams.PublishTurn); an offered event that conflicts with the stored
// one goes to rein.dlq.ingress.
//
// Metrics: rein_ingress_requests_total{transport,outcome}.
package ingress
