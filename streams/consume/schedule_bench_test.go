package consume

import (
	"strconv"
	"testing"
	"time"
)

// deep uses about n KiB of stack, as a stage's handler does under the
// loop (decode, rules, publish): a goroutine that runs it first has to
// grow its stack.
//
//go:noinline
func deep(n int) byte {
	var pad [1024]byte
	pad[n%len(pad)] = byte(n)
	if n <= 1 {
		return pad[0]
	}
	return deep(n-1) + pad[n%len(pad)]
}

// BenchmarkSchedulerTurnover measures the scheduler's cost per message
// when most messages find their conversation idle (the common case: a
// conversation has one turn in the pipeline at a time), with a handler
// that needs 16 KiB of stack.
func BenchmarkSchedulerTurnover(b *testing.B) {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "acme.c" + strconv.Itoa(i)
	}
	const window = 32 // messages in the scheduler at once
	done := make(chan struct{}, window)
	s := newScheduler(make(chan struct{}, window), nil,
		func(string, *job) time.Duration { return 0 },
		func(string, job) {
			deep(16)
			done <- struct{}{}
		})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i >= window {
			<-done
		}
		s.push(keys[i%len(keys)], job{seq: uint64(i + 1)})
	}
	for i := 0; i < min(b.N, window); i++ {
		<-done
	}
	b.StopTimer()
	s.close()
	s.wait()
}
