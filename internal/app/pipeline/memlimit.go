package pipeline

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/reinception/rein/internal/heapgoal"
)

// CheckSizes tells whether a --memory-limit and a --heap-goal value
// parse, so that a command can refuse them before it writes anything;
// Start parses them again when it applies them.
func CheckSizes(memoryLimit, heapGoal string) error {
	if _, err := byteSize("memory-limit", memoryLimit); err != nil {
		return err
	}
	_, err := byteSize("heap-goal", heapGoal)
	return err
}

// byteSize parses the value of the size flag name: bytes with an
// optional unit B, KiB, MiB, GiB or TiB (as GOMEMLIMIT writes them); ""
// is 0.
func byteSize(name, given string) (int64, error) {
	v := strings.TrimSpace(given)
	if v == "" {
		return 0, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("--%s %q: want a size such as 600MiB or 2GiB", name, given)
	}
	return n * mult, nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit: past it the
// collector runs more often instead of letting the heap double, trading
// CPU for a bounded footprint. The embedded server's memory counts too.
// 0 leaves the runtime's own setting (GOMEMLIMIT, else none).
func applyMemoryLimit(v string) error {
	n, err := byteSize("memory-limit", v)
	if err != nil || n == 0 {
		return err
	}
	debug.SetMemoryLimit(n)
	return nil
}

// DefaultHeapGoal is serve's and bench's --heap-goal: the heap the
// collector lets grow before a cycle while the live heap is small. It
// took the added p99 at 1,000 turns/s from 3.8–5.1 ms to 1.9–3.9 and the
// CPU per turn down 4–5 %, for a resident set of ≈ 345 MB where GOGC
// 100 alone kept ≈ 213 (docs/performance.md, "A heap goal").
const DefaultHeapGoal = "256MiB"

// ApplyHeapGoal starts heapgoal's tuning for a --heap-goal value and
// returns what ends it, and whether it started ("" or 0: the runtime's
// GOGC alone). Start applies Config.HeapGoal; a driver that outlives its
// Process (the bench) holds it longer with this.
func ApplyHeapGoal(v string, log *slog.Logger) (stop func(), started bool, err error) {
	n, err := byteSize("heap-goal", v)
	if err != nil {
		return nil, false, err
	}
	stop, started = heapgoal.Start(uint64(n))
	if n > 0 && !started {
		log.Info("the collector is off (GOGC=off): --heap-goal is ignored")
	}
	return stop, started, nil
}
