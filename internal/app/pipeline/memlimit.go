package pipeline

import (
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimit parses a --memory-limit value: bytes with an optional unit
// B, KiB, MiB or GiB (as GOMEMLIMIT writes them); "" or 0 is no limit.
func memoryLimit(given string) (int64, error) {
	v := strings.TrimSpace(given)
	if v == "" {
		return 0, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("--memory-limit %q: want a size such as 600MiB or 2GiB", given)
	}
	return n * mult, nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit: past it the
// collector runs more often instead of letting the heap double, trading
// CPU for a bounded footprint. The embedded server's memory counts too.
// 0 leaves the runtime's own setting (GOMEMLIMIT, else none).
func applyMemoryLimit(v string) error {
	n, err := memoryLimit(v)
	if err != nil || n == 0 {
		return err
	}
	debug.SetMemoryLimit(n)
	return nil
}
