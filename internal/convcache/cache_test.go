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
