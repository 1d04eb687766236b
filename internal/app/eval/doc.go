// Package eval holds rein's evaluation tools: latency statistics
// (Percentile, Ms) shared by the bench and demo drivers. It consumes and
// produces no events and exports no metrics.
package eval
