package pipeline

import (
	"strings"
	"testing"
)

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "1024": 1024, "512B": 512, "64KiB": 64 << 10, "600MiB": 600 << 20, " 2GiB ": 2 << 30, "1TiB": 1 << 40} {
		if got, err := byteSize("memory-limit", in); err != nil || got != want {
			t.Errorf("byteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"600MB", "-1MiB", "lots", "1.5GiB", "99999999999GiB"} {
		if _, err := byteSize("memory-limit", in); err == nil {
			t.Errorf("byteSize(%q) accepted", in)
		}
	}
	if _, err := byteSize("heap-goal", "lots"); err == nil || !strings.Contains(err.Error(), "--heap-goal") {
		t.Errorf("byteSize names the flag in its error: %v", err)
	}
}
