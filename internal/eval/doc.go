// Package eval holds rein's measurement tools: the raw JetStream chain that
// is the physical reference of `rein bench`, latency statistics, and
// resource sampling (CPU seconds, peak RSS). It consumes and produces only
// its own benchmark streams (BENCH_*) on the server it is given and exports
// no metrics.
package eval
