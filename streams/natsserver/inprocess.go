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
// machine that wait cost a fifth of the CPU per turn at full rate (rein
// bench --quick: 0.68 → 0.54 CPU s per 1,000 turns with the buffer below;
// docs/performance.md). A loopback socket avoids the wait but pays system
// calls; a buffer in memory avoids both.

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

// keptBufferCap is the largest buffer kept once drained; a larger one
// (after a burst) goes to the collector.
const keptBufferCap = 256 << 10

// bufferedConn wraps one end of a synchronous pipe so that neither side
// waits for the other to be scheduled: a write is copied into a buffer
// that a goroutine of its own writes to the pipe, and a second goroutine
// keeps reading the pipe into a buffer that Read takes from. Bytes keep
// their order each way. The caller's writes must not overlap (nats.go
// writes under its connection's lock).
type bufferedConn struct {
	pipe  net.Conn
	limit int

	mu sync.Mutex
	// Read side: in[head:] is what was read from the pipe and not yet
	// taken; rerr ends Read once in is drained.
	in       []byte
	head     int
	rerr     error
	deadline time.Time
	// Write side: out is waiting for the pipe; spare is the buffer the
	// writer goroutine gave back; werr ends Write.
	out, spare []byte
	werr       error

	readable chan struct{} // in grew, rerr or the deadline changed
	taken    chan struct{} // Read took from in
	pending  chan struct{} // out grew
	written  chan struct{} // out was handed to the pipe, or werr set
	closed   chan struct{}
	once     sync.Once
}

func newBufferedConn(pipe net.Conn, limit int) *bufferedConn {
	c := &bufferedConn{pipe: pipe, limit: limit,
		readable: make(chan struct{}, 1), taken: make(chan struct{}, 1),
		pending: make(chan struct{}, 1), written: make(chan struct{}, 1), closed: make(chan struct{})}
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

// fill reads the pipe into in until the pipe fails, holding off while
// in is past the limit.
func (c *bufferedConn) fill() {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.pipe.Read(buf)
		c.mu.Lock()
		c.in = append(c.in, buf[:n]...)
		if err != nil && c.rerr == nil {
			c.rerr = err
		}
		full := len(c.in)-c.head > c.limit
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
			full = len(c.in)-c.head > c.limit
			c.mu.Unlock()
		}
	}
}

// Read takes what fill has read, waiting for it until the read deadline.
func (c *bufferedConn) Read(b []byte) (int, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c.mu.Lock()
		if c.head < len(c.in) {
			n := copy(b, c.in[c.head:])
			c.head += n
			if c.head == len(c.in) {
				c.head, c.in = 0, c.in[:0]
				if cap(c.in) > keptBufferCap {
					c.in = nil
				}
			}
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
		if deadline.IsZero() {
			<-c.readable
			continue
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return 0, os.ErrDeadlineExceeded
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-c.readable:
		case <-timer.C:
		}
	}
}

// Write copies b for drain to write, waiting only while out is past the
// limit.
func (c *bufferedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	for c.werr == nil && len(c.out) > c.limit {
		c.mu.Unlock()
		<-c.written
		c.mu.Lock()
	}
	if c.werr != nil {
		err := c.werr
		c.mu.Unlock()
		return 0, err
	}
	c.out = append(c.out, b...)
	c.mu.Unlock()
	notify(c.pending)
	return len(b), nil
}

// drain writes out to the pipe, all that has gathered at each wake-up.
func (c *bufferedConn) drain() {
	for {
		select {
		case <-c.pending:
		case <-c.closed:
			return
		}
		c.mu.Lock()
		if len(c.out) == 0 {
			c.mu.Unlock()
			continue
		}
		batch := c.out
		c.out, c.spare = c.spare[:0], nil
		c.mu.Unlock()
		_, err := c.pipe.Write(batch)
		c.mu.Lock()
		if cap(batch) <= keptBufferCap {
			c.spare = batch[:0]
		}
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

// SetDeadline sets the read deadline: a write never waits on the other
// side except past the limit.
func (c *bufferedConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetWriteDeadline is accepted and has no effect (see SetDeadline).
func (c *bufferedConn) SetWriteDeadline(time.Time) error { return nil }

func (c *bufferedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	notify(c.readable)
	return nil
}
