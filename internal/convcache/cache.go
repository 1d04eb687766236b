package convcache

import (
	"slices"
	"sync"
	"time"
)

type entry[V any] struct {
	v    V
	seen time.Time
}

// Cache maps a conversation key to its state, bounded in size and idle time.
// It is safe for concurrent use; the values themselves are not guarded.
type Cache[V any] struct {
	mu   sync.Mutex
	m    map[string]*entry[V]
	max  int
	idle time.Duration
}

// New returns a cache of at most max conversations, each dropped after
// idle without use.
func New[V any](max int, idle time.Duration) *Cache[V] {
	return &Cache[V]{m: map[string]*entry[V]{}, max: max, idle: idle}
}

// Get returns the state of key and marks it used.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	e.seen = time.Now()
	return e.v, true
}

// Put stores the state of key; past the bound it drops the least recently
// used tenth of the cache at once, so eviction is rare.
func (c *Cache[V]) Put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = &entry[V]{v: v, seen: time.Now()}
	if n := len(c.m) - c.max; n > 0 {
		c.evictLocked(n + c.max/10)
	}
}

// Drop forgets key.
func (c *Cache[V]) Drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// Len is the number of conversations held.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func (c *Cache[V]) evictLocked(n int) {
	type kv struct {
		k string
		t time.Time
	}
	all := make([]kv, 0, len(c.m))
	for k, e := range c.m {
		all = append(all, kv{k, e.seen})
	}
	slices.SortFunc(all, func(a, b kv) int { return a.t.Compare(b.t) })
	for i := 0; i < n && i < len(all); i++ {
		delete(c.m, all[i].k)
	}
}

// Sweep drops conversations idle since before now-idle.
func (c *Cache[V]) Sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if now.Sub(e.seen) > c.idle {
			delete(c.m, k)
		}
	}
}

// StartSweeper sweeps every interval in the background until the returned
// stop function is called; stop waits for the sweeper to end.
func (c *Cache[V]) StartSweeper(every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				c.Sweep(now)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
