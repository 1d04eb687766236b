package pipeline

import "testing"

func TestMemoryLimit(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "1024": 1024, "512B": 512, "64KiB": 64 << 10, "600MiB": 600 << 20, " 2GiB ": 2 << 30} {
		if got, err := memoryLimit(in); err != nil || got != want {
			t.Errorf("memoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"600MB", "-1MiB", "lots", "1.5GiB", "99999999999GiB"} {
		if _, err := memoryLimit(in); err == nil {
			t.Errorf("memoryLimit(%q) accepted", in)
		}
	}
}
