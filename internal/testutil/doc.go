// Package testutil holds what rein's tests share: an in-process JetStream
// server started through one helper, polling with a deadline instead of
// sleeps, and golden files. It consumes and produces nothing at run time and
// exports no metrics.
package testutil
