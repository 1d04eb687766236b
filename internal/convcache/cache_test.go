package convcache

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

func TestBoundEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[int](10, time.Hour)
	for i := 0; i < 10; i++ {
		c.Put(fmt.Sprint(i), i)
	}
	c.Get("0") // 0 is now the most recently used
	c.Put("new", 99)
	if _, ok := c.Get("0"); !ok {
		t.Error("recently used entry evicted")
	}
	if _, ok := c.Get("1"); ok {
		t.Error("least recently used entry kept")
	}
	if n := c.Len(); n > 10 {
		t.Errorf("cache holds %d > bound 10", n)
	}
}

func TestSweepDropsIdle(t *testing.T) {
	c := New[string](100, time.Minute)
	c.Put("a", "x")
	c.Sweep(time.Now().Add(30 * time.Second))
	if _, ok := c.Get("a"); !ok {
		t.Fatal("dropped before its idle time")
	}
	c.Sweep(time.Now().Add(2 * time.Minute))
	if _, ok := c.Get("a"); ok {
		t.Fatal("idle entry kept")
	}
	c.Put("b", "y")
	c.Drop("b")
	if c.Len() != 0 {
		t.Fatal("drop left the entry")
	}
}

// The background sweeper, on synctest's clock: an entry idle for less
// than the TTL stays, one idle past it is dropped at the next sweep, and
// stop ends the sweeper (the bubble fails if its goroutine outlives it).
func TestStartSweeperDropsIdleInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New[int](10, time.Minute)
		c.Put("a", 1)
		stop := c.StartSweeper(10 * time.Second)
		defer stop()
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if c.Len() != 1 {
			t.Fatal("the sweeper dropped an entry before its idle time")
		}
		time.Sleep(20 * time.Second) // sweeps at 60s and 70s: idle a minute
		synctest.Wait()
		if c.Len() != 0 {
			t.Fatal("the sweeper kept an entry idle past its time")
		}
	})
}

// The byte bound: values are measured when put and again on Resize, the
// least recently used are dropped past the budget, down to nine tenths of
// it, and what is held never stays above the budget; replacing, dropping
// and sweeping give their bytes back.
func TestByteBoundEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[[]byte](1000, time.Hour).LimitBytes(100, func(b []byte) int { return len(b) })
	for i := range 5 {
		c.Put(fmt.Sprint(i), make([]byte, 20))
	}
	if c.Bytes() != 100 || c.Len() != 5 {
		t.Fatalf("%d bytes in %d entries, want 100 in 5", c.Bytes(), c.Len())
	}
	c.Get("0") // 0 is now the most recently used
	c.Put("new", make([]byte, 20))
	if c.Bytes() > 90 {
		t.Errorf("%d bytes held past the budget's nine tenths", c.Bytes())
	}
	if _, ok := c.Get("0"); !ok {
		t.Error("recently used entry evicted")
	}
	if _, ok := c.Get("1"); ok {
		t.Error("least recently used entry kept")
	}
	// A value that grows in place counts once measured again.
	v, _ := c.Get("new")
	v = append(v, make([]byte, 60)...)
	c.Put("new", v) // replacing counts the new size, not both
	if got := c.Bytes(); got > 100 {
		t.Errorf("%d bytes held after a replace, budget 100", got)
	}
	grown := make([]byte, 10, 200)
	c.Put("g", grown)
	before := c.Bytes()
	c.Resize("g") // unchanged: same bytes
	if c.Bytes() != before {
		t.Errorf("resize of an unchanged value: %d bytes, was %d", c.Bytes(), before)
	}
	sum := int64(0)
	for _, k := range []string{"0", "2", "3", "4", "new", "g"} {
		if v, ok := c.Get(k); ok {
			sum += int64(len(v))
		}
	}
	if sum != c.Bytes() {
		t.Errorf("held values sum to %d bytes, the cache counts %d", sum, c.Bytes())
	}
	c.Drop("g")
	c.Sweep(time.Now().Add(2 * time.Hour))
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Errorf("after drop and sweep: %d entries, %d bytes", c.Len(), c.Bytes())
	}
}

// Resize: a value grown in place past the budget pushes the least
// recently used out.
func TestResizeKeepsTheByteBound(t *testing.T) {
	type state struct{ b []byte }
	c := New[*state](1000, time.Hour).LimitBytes(100, func(s *state) int { return len(s.b) })
	a, b := &state{make([]byte, 30)}, &state{make([]byte, 30)}
	c.Put("a", a)
	c.Put("b", b)
	b.b = append(b.b, make([]byte, 50)...)
	c.Resize("b")
	if _, ok := c.Get("a"); ok {
		t.Error("the least recently used entry was kept past the budget")
	}
	if c.Bytes() != 80 || c.Len() != 1 {
		t.Errorf("%d bytes in %d entries, want 80 in 1", c.Bytes(), c.Len())
	}
}

// BenchmarkPutNewPastTheBound: a conversation's first turn on a full cache
// (behind slow models every turn is one), 10,000 held.
func BenchmarkPutNewPastTheBound(b *testing.B) {
	c := New[int](10000, time.Hour)
	keys := make([]string, 50000)
	for i := range keys {
		keys[i] = fmt.Sprint("conv-", i)
	}
	i := 0
	for b.Loop() {
		c.Put(keys[i%len(keys)], i)
		i++
	}
}
