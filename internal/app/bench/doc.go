// Package bench holds the physical reference of `rein bench`: the raw
// JetStream chain (RunRawChain, RunRawShape) that moves the same messages
// through three consume → publish → ack hops with no rein code, and the
// resource sampling (CPUTime, PeakRSSMB) the bench reports. It consumes and
// produces only its own benchmark streams (BENCH_*) on the server it is
// given and exports no metrics.
package bench
