package bench

import (
	"os"
	"path/filepath"
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
