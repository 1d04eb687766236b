// Package heapgoal gives the Go collector a heap goal in bytes: while the
// live heap is small, the collector lets the heap grow to the goal before
// its next cycle, instead of to twice the live heap (GOGC 100). Past the
// goal it runs as it would without one: each cycle gets the GOGC in force
// (100 unless set) as headroom, so a goal never makes the collector run
// more often than GOGC alone.
//
// Why: at 1,000 turns/s over 2,000 conversations (a live heap of ≈ 40
// MB) GOGC 100 ran a cycle every half second, and each cycle's marking
// added milliseconds to the turns it overlapped: the added p99 was
// 3.8–5.1 ms, and 1.9–3.9 ms with a goal of 256 MiB (docs/performance.md,
// "A heap goal"). Stages that hold little, as the ingress, the injector
// and the escalation stage do, stay in that regime; a process whose
// caches have filled is past the goal, where nothing changes.
//
// It sets the runtime's GC percent after every cycle (runtime/debug), from
// runtime/metrics; a soft memory limit (GOMEMLIMIT, --memory-limit) still
// applies on top. It consumes and produces nothing and exports no metrics
// of its own: the Go collector's go_gc_gogc_percent shows its setting.
package heapgoal
