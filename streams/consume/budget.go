package consume

import (
	"context"
	"sync"
	"time"
)

// byteBudget bounds the bytes of the messages a consumer holds (queued for
// their conversation or being handled). The consume callback takes a
// message's bytes before queueing it and waits while the budget is spent:
// a waiting callback asks the client for nothing more, so the server stops
// delivering (back-pressure instead of a backlog in memory). A message
// larger than the whole budget still goes alone, so nothing is stuck.
type byteBudget struct {
	max int64

	mu      sync.Mutex
	held    int64
	peak    int64
	free    chan struct{} // closed when bytes are given back to waiters
	waiting int           // acquirers waiting on free
}

func newByteBudget(max int64) *byteBudget {
	return &byteBudget{max: max, free: make(chan struct{})}
}

// acquire takes n bytes, waiting until they fit (or nothing is held).
// While it waits, beat runs every interval (the waiting message's
// heartbeat). It reports false when ctx ends first.
func (b *byteBudget) acquire(ctx context.Context, n int64, interval time.Duration, beat func()) bool {
	var tick <-chan time.Time
	for {
		b.mu.Lock()
		if b.held == 0 || b.held+n <= b.max {
			b.held += n
			b.peak = max(b.peak, b.held)
			b.mu.Unlock()
			return true
		}
		free := b.free
		b.waiting++
		b.mu.Unlock()
		if tick == nil && beat != nil && interval > 0 {
			t := time.NewTicker(interval)
			defer t.Stop()
			tick = t.C
		}
		var done bool
		select {
		case <-free:
		case <-tick:
			beat()
		case <-ctx.Done():
			done = true
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if done {
			return false
		}
	}
}

// release gives n bytes back and wakes the waiters, if any (a nil budget
// holds nothing). Without waiters it allocates nothing.
func (b *byteBudget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	if b.waiting > 0 {
		close(b.free)
		b.free = make(chan struct{})
	}
	b.mu.Unlock()
}

// inUse is the bytes held now and the most held at once.
func (b *byteBudget) inUse() (held, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.peak
}

// msgBytes is what a message holds in memory by its size: its data and
// headers (keys and values) and subject.
func msgBytes(subject string, header map[string][]string, data []byte) int64 {
	n := len(subject) + len(data)
	for k, vs := range header {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return int64(n)
}
