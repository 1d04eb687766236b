// Package bustest holds the test helpers that streams and its packages
// (consume, natsserver, ingress) share: a user turn to publish, a consumer
// on REIN_TURNS, a tenant's ingest connection, a log buffer. Tests only.
package bustest
