package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A process directory as Linux shows it: each thread's schedstat holds
// its CPU time, its wait on the run queue and its time slices.
func fakeProc(t *testing.T, stats map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for tid, stat := range stats {
		if err := os.MkdirAll(filepath.Join(dir, "task", tid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "task", tid, "schedstat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunQueueWaitSumsTheThreadsWaitSince(t *testing.T) {
	then := threadWaits(fakeProc(t, map[string]string{"1": "900 100 3\n", "2": "50 400 1\n", "3": "7 70 1\n", "4": "garbled\n"}))
	if len(then) != 3 || then["1"] != 100 || then["2"] != 400 || then["3"] != 70 {
		t.Fatalf("waits %v", then)
	}
	// Thread 1 waited 1 ms more, thread 2 nothing, thread 3 exited, thread
	// 5 started and waited 2 ms.
	now := threadWaits(fakeProc(t, map[string]string{"1": "5000 1000100 9\n", "2": "60 400 2\n", "5": "10 2000000 1\n"}))
	if got, want := waitedSince(then, now), 3*time.Millisecond; got != want {
		t.Errorf("waited %v, want %v", got, want)
	}
	if w := threadWaits(filepath.Join(t.TempDir(), "absent")); w != nil {
		t.Errorf("a missing process directory gave %v", w)
	}
	if _, err := os.Stat("/proc/self/task"); err == nil && threadWaits("/proc/self") == nil {
		t.Error("no thread waits read from this process's own /proc directory")
	}
}

// sink keeps the test's allocations on the heap.
var sink [][]byte

func TestHeapUseCountsWhatIsAllocatedBetweenTwoReads(t *testing.T) {
	h0 := readHeapUse()
	for range 64 {
		sink = append(sink, make([]byte, 64<<10))
	}
	sink = nil
	h := readHeapUse().since(h0)
	if h.allocBytes < 64*64<<10 {
		t.Errorf("%d bytes allocated, want at least %d", h.allocBytes, 64*64<<10)
	}
	bytes, gc := heapUse{allocBytes: 5000, gcCycles: 3}.perTurn(100)
	if bytes != 50 || gc != 30 {
		t.Errorf("per turn %v bytes, %v collections per 1,000 turns; want 50, 30", bytes, gc)
	}
	if bytes, gc := h.perTurn(0); bytes != 0 || gc != 0 {
		t.Errorf("no turns: %v, %v", bytes, gc)
	}
}
