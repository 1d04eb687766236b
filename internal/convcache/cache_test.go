package convcache

import (
	"fmt"
	"testing"
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

func TestStartSweeperDropsIdleInBackground(t *testing.T) {
	c := New[int](10, time.Millisecond)
	c.Put("a", 1)
	stop := c.StartSweeper(time.Millisecond)
	defer stop()
	deadline := time.Now().Add(5 * time.Second)
	for c.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper never dropped the idle entry")
		}
		time.Sleep(time.Millisecond)
	}
}
