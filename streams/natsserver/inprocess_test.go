package natsserver

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor fails the test when ch does not deliver within d.
func waitFor[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %s", what, d)
		panic("unreachable")
	}
}

type ioResult struct {
	n   int
	err error
}

// The point of the buffer: a write returns while the other side of the
// pipe is not reading (a bare net.Pipe blocks until it does).
func TestBufferedConnWriteDoesNotWaitForTheReader(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := newBufferedConn(a, 1<<20)
	defer c.Close()
	done := make(chan ioResult, 1)
	go func() {
		n, err := c.Write(bytes.Repeat([]byte("x"), 4096))
		done <- ioResult{n, err}
	}()
	if r := waitFor(t, done, 5*time.Second, "write with the peer not reading"); r.n != 4096 || r.err != nil {
		t.Fatalf("write: %d, %v", r.n, r.err)
	}
	// What was written still arrives, in full.
	got := make([]byte, 4096)
	if _, err := io.ReadFull(b, got); err != nil || !bytes.Equal(got, bytes.Repeat([]byte("x"), 4096)) {
		t.Fatalf("peer read: %v", err)
	}
}

// Bytes arrive whole and in order each way, through writes and reads of
// every size, with far more in flight than the limit (so both sides wait
// on it) and a slow peer.
func TestBufferedConnKeepsOrderBothWays(t *testing.T) {
	const total = 4 << 20
	a, b := net.Pipe()
	c := newBufferedConn(a, 64<<10)
	defer c.Close()
	defer b.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	up, down := make([]byte, total), make([]byte, total)
	for i := range up {
		up[i], down[i] = byte(rng.Uint32()), byte(rng.Uint32())
	}
	chunks := func(seed uint64, data []byte, fn func([]byte) error) error {
		r := rand.New(rand.NewPCG(seed, seed))
		for len(data) > 0 {
			n := min(1+r.IntN(100_000), len(data))
			if err := fn(data[:n]); err != nil {
				return err
			}
			data = data[n:]
		}
		return nil
	}
	readAll := func(seed uint64, conn net.Conn, into []byte) error {
		return chunks(seed, into, func(p []byte) error {
			_, err := io.ReadFull(conn, p)
			return err
		})
	}
	errs := make(chan error, 4)
	gotUp, gotDown := make([]byte, total), make([]byte, total)
	go func() { errs <- chunks(3, up, func(p []byte) error { _, err := c.Write(p); return err }) }()
	go func() { errs <- readAll(4, b, gotUp) }()
	go func() { errs <- chunks(5, down, func(p []byte) error { _, err := b.Write(p); return err }) }()
	go func() { errs <- readAll(6, c, gotDown) }()
	for range 4 {
		if err := waitFor(t, errs, time.Minute, "transfer"); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(gotUp, up) {
		t.Fatal("bytes written through the buffered side arrived changed or out of order")
	}
	if !bytes.Equal(gotDown, down) {
		t.Fatal("bytes read through the buffered side arrived changed or out of order")
	}
}

// Close ends a waiting Read and a Write held at the limit, and later
// calls fail; the peer closing ends Read once what it sent is taken.
func TestBufferedConnClose(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		a, b := net.Pipe()
		defer b.Close()
		c := newBufferedConn(a, 1024)
		reads := make(chan ioResult, 1)
		go func() {
			n, err := c.Read(make([]byte, 10))
			reads <- ioResult{n, err}
		}()
		writes := make(chan ioResult, 1)
		var accepted atomic.Int64
		go func() {
			// The peer never reads: the first writes are buffered and handed
			// to the pipe (which blocks), the next ones fill the buffer past
			// the limit and wait.
			var r ioResult
			for r.err == nil {
				r.n, r.err = c.Write(make([]byte, 600))
				accepted.Add(int64(r.n))
			}
			writes <- r
		}()
		checkFor(t, "writes up to the limit", func() bool { return accepted.Load() > 1024 })
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if r := waitFor(t, reads, 5*time.Second, "read after close"); !errors.Is(r.err, net.ErrClosed) && !errors.Is(r.err, io.ErrClosedPipe) {
			t.Fatalf("read after close: %d, %v", r.n, r.err)
		}
		if r := waitFor(t, writes, 5*time.Second, "write held at the limit after close"); r.err == nil {
			t.Fatal("write held at the limit returned no error after close")
		}
		if _, err := c.Write([]byte("x")); err == nil {
			t.Fatal("write after close: no error")
		}
	})
	t.Run("peer", func(t *testing.T) {
		a, b := net.Pipe()
		c := newBufferedConn(a, 1024)
		defer c.Close()
		if _, err := b.Write([]byte("last words")); err != nil {
			t.Fatal(err)
		}
		b.Close()
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "last words" {
			t.Fatalf("read after the peer closed: %q, %v", got, err)
		}
	})
}

// Writes past the limit wait for the pipe: with the peer not reading,
// what Write accepts stops at the limit plus the batch the pipe holds.
func TestBufferedConnWritesWaitPastTheLimit(t *testing.T) {
	const limit, chunk = 4096, 600
	a, b := net.Pipe()
	defer b.Close()
	c := newBufferedConn(a, limit)
	var accepted atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			n, err := c.Write(make([]byte, chunk))
			if err != nil {
				return
			}
			accepted.Add(int64(n))
		}
	}()
	// At most: a batch of limit+chunk with the pipe, as much again
	// buffered, one chunk more; 600,000 if nothing held the writer back.
	const most = 2*(limit+chunk) + chunk
	checkFor(t, "writes up to the limit", func() bool { return accepted.Load() > limit })
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
		if n := accepted.Load(); n > most {
			t.Fatalf("write accepted %d bytes with the peer not reading, want at most %d", n, most)
		}
		runtime.Gosched()
	}
	c.Close()
	<-done
}

// What the read side holds is packed: many small writes of the server
// (one message each) fill chunks, not a chunk each.
func TestBufferedConnPacksSmallReads(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := newBufferedConn(a, 1<<20)
	defer c.Close()
	const writes, size = 10_000, 10
	for range writes {
		if _, err := b.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, "the peer's writes taken off the pipe", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.in.size == writes*size
	})
	c.mu.Lock()
	held := len(c.in.bufs) - c.in.head
	c.mu.Unlock()
	if most := writes*size/chunkSize + 1; held > most {
		t.Fatalf("%d bytes in %d writes are held in %d chunks of %d bytes, want at most %d", writes*size, writes, held, chunkSize, most)
	}
}

// A write held at the limit ends at the write deadline, as a write to a
// bare pipe whose reader stopped does (nats.go sets one per write).
func TestBufferedConnWriteDeadline(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := newBufferedConn(a, 1024)
	defer c.Close()
	if err := c.SetWriteDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := c.Write(make([]byte, 600)); err != nil {
				done <- err
				return
			}
		}
	}()
	err := waitFor(t, done, 5*time.Second, "a write held at the limit past its deadline")
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("write past its deadline: %v, want a timeout", err)
	}
}

// A read deadline (nats.go sets one for its handshake) ends a waiting
// Read as a timeout; cleared, Read waits for data again.
func TestBufferedConnReadDeadline(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := newBufferedConn(a, 1024)
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := c.Read(make([]byte, 10))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past its deadline: %v, want a timeout", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	reads := make(chan ioResult, 1)
	go func() {
		n, err := c.Read(make([]byte, 10))
		reads <- ioResult{n, err}
	}()
	if _, err := b.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if r := waitFor(t, reads, 5*time.Second, "read with the deadline cleared"); r.n != 5 || r.err != nil {
		t.Fatalf("read: %d, %v", r.n, r.err)
	}
}

// checkFor polls cond until it holds, for at most ten seconds
// (internal/testutil's CheckFor imports this package).
func checkFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
