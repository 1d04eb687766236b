package streams

import (
	"sync"
	"testing"
	"time"
)

// TestPartitionKeepsOrderAndNeverBlocks: pushes never wait for the
// worker, the worker sees every job in push order, and close ends pop once
// the queue is empty.
func TestPartitionKeepsOrderAndNeverBlocks(t *testing.T) {
	p := newPartition()
	const n = 20000
	for i := 0; i < n; i++ { // no worker yet: a bounded queue would block here
		if !p.push(job{at: time.Unix(int64(i), 0)}) {
			t.Fatal("push refused before close")
		}
	}
	var got []int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			j, ok := p.pop()
			if !ok {
				return
			}
			got = append(got, j.at.Unix())
		}
	}()
	for i := n; i < 2*n; i++ { // pushes racing with the worker
		p.push(job{at: time.Unix(int64(i), 0)})
	}
	p.close()
	wg.Wait()
	if len(got) != 2*n {
		t.Fatalf("popped %d of %d", len(got), 2*n)
	}
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("job %d came out as %d", i, v)
		}
	}
	if p.push(job{}) {
		t.Error("push accepted after close")
	}
}
