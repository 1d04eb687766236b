package natsserver

import (
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// The embedded server's in-process connection is a net.Pipe: a write
// returns only once the other side's goroutine has read it. Both ends of a
// NATS connection write from busy goroutines (the server's read loop
// flushes deliveries and acknowledgements to other clients inline; a
// client publishes under its connection's lock), so every write waited
// for a goroutine on the other side to be scheduled. On a loaded 2-vCPU
// machine that wait cost 8–20 % of the CPU per turn at full rate (rein
// bench --quick, docs/performance.md), and throughput behind slow models.
// A loopback socket avoids the wait but pays system calls; a buffer in
// memory avoids both. It is not free: each message read costs one more
// wake-up, which showed at a moderate rate with many reads (30,000
// conversations active; --nats-stage-conn pipe keeps the bare pipe).

// bufferedInProcess gives nats.go the server's in-process pipe behind a
// bufferedConn.
type bufferedInProcess struct{ srv *server.Server }

func (b bufferedInProcess) InProcessConn() (net.Conn, error) {
	c, err := b.srv.InProcessConn()
	if err != nil {
		return nil, err
	}
	return newBufferedConn(c, bufferedConnLimit), nil
}

// bufferedConnLimit bounds what a bufferedConn holds each way. Past it a
// write waits for the pipe, and the pipe's writer for the reader, as on a
// bare pipe: the server's own limits for a slow client (its write
// deadline, max pending) apply as before.
const bufferedConnLimit = 4 << 20

// bufferedConn wraps one end of a synchronous pipe so that neither side
// waits for the other to be scheduled: a write is copied into buffers
// that a goroutine of its own writes to the pipe, and a second goroutine
// keeps reading the pipe into buffers that Read takes from. Bytes keep
// their order each way. The caller's writes must not overlap (nats.go
// writes under its connection's lock). The buffers are chunks each side
// reuses, so a steady flow allocates nothing.
type bufferedConn struct {
	pipe  net.Conn
	limit int

	mu sync.Mutex
	// Read side: what fill read and Read has not taken; rerr ends Read
	// once in is empty.
	in       chunks
	rerr     error
	deadline time.Time
	// Write side: what Write took and drain has not handed to the pipe;
	// werr ends Write.
	out       chunks
	werr      error
	wdeadline time.Time

	readable chan struct{} // in grew, rerr or the deadline changed
	taken    chan struct{} // Read took from in
	pending  chan struct{} // out grew
	written  chan struct{} // drain handed a batch to the pipe, or werr set
	closed   chan struct{}
	once     sync.Once
}

func newBufferedConn(pipe net.Conn, limit int) *bufferedConn {
	c := &bufferedConn{pipe: pipe, limit: limit,
		readable: make(chan struct{}, 1), taken: make(chan struct{}, 1),
		pending: make(chan struct{}, 1), written: make(chan struct{}, 1), closed: make(chan struct{})}
	c.in.free, c.out.free = new([][]byte), new([][]byte)
	go c.fill()
	go c.drain()
	return c
}

// notify wakes the one goroutine that may wait on ch.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// chunkSize is the size of a chunk, and the most one read of the pipe
// takes.
const chunkSize = 32 << 10

// keptChunks is how many drained chunks a connection keeps for reuse
// (512 KiB); those past it, after a burst, go to the collector.
const keptChunks = 16

// chunks is a queue of bytes in chunks: bufs[head][off:], then the
// chunks after it. Drained chunks go to free, the connection's own list
// (a sync.Pool would be shared by every connection and, under the race
// detector, drop a quarter of what it is given).
type chunks struct {
	bufs      [][]byte
	head, off int
	size      int // bytes queued
	free      *[][]byte
}

func (q *chunks) get() []byte {
	if n := len(*q.free); n > 0 {
		b := (*q.free)[n-1]
		(*q.free)[n-1] = nil
		*q.free = (*q.free)[:n-1]
		return b[:0]
	}
	return make([]byte, 0, chunkSize)
}

func (q *chunks) put(b []byte) {
	if cap(b) == chunkSize && len(*q.free) < keptChunks {
		*q.free = append(*q.free, b[:0])
	}
}

// push appends b, copying it into the last chunk's room and new chunks.
func (q *chunks) push(b []byte) {
	q.size += len(b)
	for len(b) > 0 {
		n := len(q.bufs)
		if n == q.head || len(q.bufs[n-1]) == cap(q.bufs[n-1]) {
			q.bufs = append(q.bufs, q.get())
			n++
		}
		last := q.bufs[n-1]
		k := copy(last[len(last):cap(last)], b)
		q.bufs[n-1] = last[:len(last)+k]
		b = b[k:]
	}
}

// take copies the oldest bytes into p, freeing drained chunks.
func (q *chunks) take(p []byte) int {
	n := 0
	for n < len(p) && q.head < len(q.bufs) {
		k := copy(p[n:], q.bufs[q.head][q.off:])
		n += k
		q.off += k
		if q.off == len(q.bufs[q.head]) {
			q.put(q.bufs[q.head])
			q.bufs[q.head] = nil
			q.head, q.off = q.head+1, 0
		}
	}
	q.size -= n
	if q.head == len(q.bufs) {
		q.bufs, q.head = q.bufs[:0], 0
	}
	return n
}

// queued is what the queue holds, chunk by chunk in order (the first from
// off); it stays valid until reset.
func (q *chunks) queued() [][]byte {
	if q.head < len(q.bufs) {
		q.bufs[q.head] = q.bufs[q.head][q.off:]
		q.off = 0
	}
	return q.bufs[q.head:]
}

// reset empties the queue, freeing its chunks.
func (q *chunks) reset() {
	for i := q.head; i < len(q.bufs); i++ {
		q.put(q.bufs[i])
		q.bufs[i] = nil
	}
	q.bufs, q.head, q.off, q.size = q.bufs[:0], 0, 0, 0
}

// fill reads the pipe into in until the pipe fails, holding off while
// in is past the limit.
func (c *bufferedConn) fill() {
	// One read of the pipe takes what one write of the server gave, often
	// a single small message: it is copied into the queue's chunks, packed,
	// so what in holds in memory is what it counts.
	buf := make([]byte, chunkSize)
	for {
		n, err := c.pipe.Read(buf)
		c.mu.Lock()
		c.in.push(buf[:n])
		if err != nil && c.rerr == nil {
			c.rerr = err
		}
		full := c.in.size > c.limit
		c.mu.Unlock()
		notify(c.readable)
		if err != nil {
			return
		}
		for full {
			select {
			case <-c.taken:
			case <-c.closed:
				return
			}
			c.mu.Lock()
			full = c.in.size > c.limit
			c.mu.Unlock()
		}
	}
}

// Read takes what fill has read, waiting for it until the read deadline.
func (c *bufferedConn) Read(b []byte) (int, error) {
	var w waiter
	defer w.stop()
	for {
		c.mu.Lock()
		if c.in.size > 0 {
			n := c.in.take(b)
			c.mu.Unlock()
			notify(c.taken)
			return n, nil
		}
		if c.rerr != nil {
			err := c.rerr
			c.mu.Unlock()
			return 0, err
		}
		deadline := c.deadline
		c.mu.Unlock()
		if !w.wait(c.readable, deadline) {
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// Write copies b for drain to write, waiting only while out is past the
// limit, and then until the write deadline (nats.go sets one per write:
// a server that stops reading for that long fails the connection, as on
// the bare pipe).
func (c *bufferedConn) Write(b []byte) (int, error) {
	var w waiter
	defer w.stop()
	c.mu.Lock()
	for c.werr == nil && c.out.size > c.limit {
		deadline := c.wdeadline
		c.mu.Unlock()
		if !w.wait(c.written, deadline) {
			return 0, os.ErrDeadlineExceeded
		}
		c.mu.Lock()
	}
	if c.werr != nil {
		err := c.werr
		c.mu.Unlock()
		return 0, err
	}
	c.out.push(b)
	c.mu.Unlock()
	notify(c.pending)
	return len(b), nil
}

// waiter waits for a signal until a deadline, with one timer for all its
// waits.
type waiter struct{ timer *time.Timer }

// wait waits for ch, or until deadline when it is set; it reports false,
// without waiting, once the deadline has passed.
func (w *waiter) wait(ch <-chan struct{}, deadline time.Time) bool {
	if deadline.IsZero() {
		<-ch
		return true
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-ch:
	case <-w.timer.C:
	}
	return true
}

func (w *waiter) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// drain writes out to the pipe, all that has gathered at each wake-up.
func (c *bufferedConn) drain() {
	batch := chunks{free: c.out.free}
	for {
		select {
		case <-c.pending:
		case <-c.closed:
			return
		}
		c.mu.Lock()
		batch, c.out = c.out, batch
		c.mu.Unlock()
		var err error
		for _, b := range batch.queued() {
			if _, err = c.pipe.Write(b); err != nil {
				break
			}
		}
		c.mu.Lock()
		batch.reset()
		if err != nil && c.werr == nil {
			c.werr = err
		}
		c.mu.Unlock()
		notify(c.written)
		if err != nil {
			return
		}
	}
}

// Close closes the pipe; what Write had buffered and not yet handed to
// the pipe is dropped, as a socket's unsent bytes are.
func (c *bufferedConn) Close() error {
	err := c.pipe.Close()
	c.once.Do(func() {
		close(c.closed)
		c.mu.Lock()
		if c.rerr == nil {
			c.rerr = net.ErrClosed
		}
		if c.werr == nil {
			c.werr = net.ErrClosed
		}
		c.mu.Unlock()
		notify(c.readable)
		notify(c.written)
	})
	return err
}

func (c *bufferedConn) LocalAddr() net.Addr  { return c.pipe.LocalAddr() }
func (c *bufferedConn) RemoteAddr() net.Addr { return c.pipe.RemoteAddr() }

// SetDeadline sets both deadlines. A write waits on the other side only
// past the limit, so only such a wait ends at the write deadline.
func (c *bufferedConn) SetDeadline(t time.Time) error {
	_ = c.SetWriteDeadline(t)
	return c.SetReadDeadline(t)
}

func (c *bufferedConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdeadline = t
	c.mu.Unlock()
	return nil
}

func (c *bufferedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	notify(c.readable)
	return nil
}
