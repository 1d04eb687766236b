package convcache

import (
	"slices"
	"sync"
	"time"
)

type entry[V any] struct {
	v     V
	seen  time.Time
	bytes int64
}

// Cache maps a conversation key to its state, bounded in entries, in bytes
// (when LimitBytes set a budget) and in idle time. It is safe for
// concurrent use; the values themselves are not guarded.
type Cache[V any] struct {
	mu       sync.Mutex
	m        map[string]*entry[V]
	max      int
	idle     time.Duration
	maxBytes int64
	bytes    int64
	size     func(V) int
}

// New returns a cache of at most max conversations, each dropped after
// idle without use.
func New[V any](max int, idle time.Duration) *Cache[V] {
	return &Cache[V]{m: map[string]*entry[V]{}, max: max, idle: idle}
}

// LimitBytes bounds the bytes the cache holds as well: size tells what a
// value holds (an estimate of its strings and slices); past max the least
// recently used are dropped. Values that grow in place are measured again
// by Resize. Call it before the cache is used.
func (c *Cache[V]) LimitBytes(max int64, size func(V) int) *Cache[V] {
	c.maxBytes, c.size = max, size
	return c
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

// Put stores the state of key; past a bound it drops the least recently
// used down to nine tenths of it at once, so eviction is rare.
func (c *Cache[V]) Put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		c.bytes -= old.bytes
	}
	e := &entry[V]{v: v, seen: time.Now()}
	c.m[key] = e
	c.measureLocked(e)
	c.boundLocked()
}

// Resize measures key's value again after it grew or shrank in place, and
// keeps the byte bound (the value itself may be dropped, when it is the
// least recently used).
func (c *Cache[V]) Resize(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || c.size == nil {
		return
	}
	c.bytes -= e.bytes
	c.measureLocked(e)
	c.boundLocked()
}

// Bytes is what the cache holds by its values' sizes (0 without LimitBytes).
func (c *Cache[V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Drop forgets key.
func (c *Cache[V]) Drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(key)
}

func (c *Cache[V]) dropLocked(key string) {
	if e, ok := c.m[key]; ok {
		c.bytes -= e.bytes
		delete(c.m, key)
	}
}

func (c *Cache[V]) measureLocked(e *entry[V]) {
	if c.size != nil {
		e.bytes = int64(c.size(e.v))
		c.bytes += e.bytes
	}
}

// boundLocked drops the least recently used past either bound, down to
// nine tenths of the bound that was passed.
func (c *Cache[V]) boundLocked() {
	overCount := len(c.m) > c.max
	overBytes := c.maxBytes > 0 && c.bytes > c.maxBytes
	if !overCount && !overBytes {
		return
	}
	keepCount, keepBytes := len(c.m), c.bytes
	if overCount {
		keepCount = c.max - c.max/10
	}
	if overBytes {
		keepBytes = c.maxBytes - c.maxBytes/10
	}
	c.evictLocked(keepCount, keepBytes)
}

// Len is the number of conversations held.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// evictLocked drops the least recently used until at most count entries
// and bytes are held.
func (c *Cache[V]) evictLocked(count int, bytes int64) {
	type kv struct {
		k string
		t time.Time
	}
	all := make([]kv, 0, len(c.m))
	for k, e := range c.m {
		all = append(all, kv{k, e.seen})
	}
	slices.SortFunc(all, func(a, b kv) int { return a.t.Compare(b.t) })
	for _, e := range all {
		if len(c.m) <= count && c.bytes <= bytes {
			return
		}
		c.dropLocked(e.k)
	}
}

// Sweep drops conversations idle since before now-idle.
func (c *Cache[V]) Sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if now.Sub(e.seen) > c.idle {
			c.dropLocked(k)
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
