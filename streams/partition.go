package streams

import "sync"

// partition is one worker's queue of delivered messages. It grows with
// what is actually waiting instead of reserving room for the consumer's
// whole MaxAckPending per worker (64 workers × 4,096 slots per stage was
// tens of megabytes held for nothing), and push never blocks, so the
// delivery callback is never held up by one busy conversation.
type partition struct {
	mu     sync.Mutex
	items  []job
	head   int
	closed bool
	wake   chan struct{} // capacity 1: a pending wake-up
}

func newPartition() *partition { return &partition{wake: make(chan struct{}, 1)} }

// push queues j; it reports false after close.
func (p *partition) push(j job) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.items = append(p.items, j)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return true
}

// pop returns the oldest queued job, waiting for one; ok is false once the
// partition is closed and empty.
func (p *partition) pop() (j job, ok bool) {
	for {
		p.mu.Lock()
		if p.head < len(p.items) {
			j = p.items[p.head]
			p.items[p.head] = job{}
			p.head++
			if p.head == len(p.items) {
				// Drained: reuse the array from its start, and let a large
				// one go once a burst is over.
				p.head = 0
				if cap(p.items) > 1024 {
					p.items = nil
				} else {
					p.items = p.items[:0]
				}
			}
			p.mu.Unlock()
			return j, true
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return job{}, false
		}
		<-p.wake
	}
}

// close lets pop return once the queue is empty.
func (p *partition) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
