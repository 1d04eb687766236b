package bench

import (
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPUTime is the process's user+system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSSMB is the process's peak resident set size in MiB (VmHWM).
func PeakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			return float64(ru.Maxrss) / 1024
		}
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// threadWaits is how long each of the process's threads (by id) has
// waited, runnable, on the kernel's run queue for a CPU: the second field
// of procDir/task/<tid>/schedstat (Linux; nil elsewhere).
func threadWaits(procDir string) map[string]time.Duration {
	tasks, err := os.ReadDir(filepath.Join(procDir, "task"))
	if err != nil {
		return nil
	}
	waits := make(map[string]time.Duration, len(tasks))
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(procDir, "task", t.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			waits[t.Name()] = time.Duration(ns)
		}
	}
	return waits
}

// waitedSince is how long the threads of now waited on the run queue
// since then (a thread started since counts from zero; one that exited
// takes its share with it).
func waitedSince(then, now map[string]time.Duration) time.Duration {
	var d time.Duration
	for tid, w := range now {
		d += max(0, w-then[tid])
	}
	return d
}

// heapUse is the process's heap allocation and collections so far, from
// runtime/metrics (cumulative; cheap to read, no stop of the world).
type heapUse struct {
	allocBytes, gcCycles uint64
}

// heapMetrics are the two runtime metrics heapUse reads.
var heapMetrics = [2]string{"/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles"}

// readHeapUse reads heapUse now.
func readHeapUse() heapUse {
	s := []metrics.Sample{{Name: heapMetrics[0]}, {Name: heapMetrics[1]}}
	metrics.Read(s)
	var h heapUse
	if s[0].Value.Kind() == metrics.KindUint64 {
		h.allocBytes = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		h.gcCycles = s[1].Value.Uint64()
	}
	return h
}

// since is what was allocated and collected between h0 and h.
func (h heapUse) since(h0 heapUse) heapUse {
	return heapUse{allocBytes: h.allocBytes - h0.allocBytes, gcCycles: h.gcCycles - h0.gcCycles}
}

// perTurn is h as bytes allocated per turn and collections per 1,000
// turns (zero for no turns).
func (h heapUse) perTurn(turns int) (allocBytes, gcPer1000 float64) {
	if turns <= 0 {
		return 0, 0
	}
	return float64(h.allocBytes) / float64(turns), float64(h.gcCycles) / float64(turns) * 1000
}
