package convcache

import (
	"container/list"
	"sync"
	"time"
)

type entry[V any] struct {
	key   string
	v     V
	seen  time.Time
	bytes int64
}

// Cache maps a conversation key to its state, bounded in entries, in bytes
// (when LimitBytes set a budget) and in idle time. It is safe for
// concurrent use; the values themselves are not guarded. Entries are kept
// in a list from the most to the least recently used, so eviction and the
// idle sweep take from its back without sorting or scanning the rest.
type Cache[V any] struct {
	mu       sync.Mutex
	m        map[string]*list.Element // of *entry[V]
	order    list.List                // front: most recently used
	max      int
	idle     time.Duration
	maxBytes int64
	bytes    int64
	size     func(V) int
}

// DefaultMax is the stages' default count bound (the detector's and the
// agent worker's MaxConversations). Their budgets in bytes bind first for
// any real conversation; the count is a backstop. It was 10,000, and a
// contact center with more conversations active at once than that (30 s
// between turns at 1,000 turns/s is 30,000) missed on every turn whatever
// the budget: the least recently used is always the next one due.
const DefaultMax = 100_000

// New returns a cache of at most max conversations, each dropped after
// idle without use.
func New[V any](max int, idle time.Duration) *Cache[V] {
	return &Cache[V]{m: map[string]*list.Element{}, max: max, idle: idle}
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
	el, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	e := el.Value.(*entry[V])
	e.seen = time.Now()
	c.order.MoveToFront(el)
	return e.v, true
}

// Put stores the state of key; past a bound it drops the least recently
// used down to nine tenths of it at once, so eviction is rare.
func (c *Cache[V]) Put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if ok {
		e := el.Value.(*entry[V])
		c.bytes -= e.bytes
		e.v, e.seen = v, time.Now()
		c.order.MoveToFront(el)
	} else {
		el = c.order.PushFront(&entry[V]{key: key, v: v, seen: time.Now()})
		c.m[key] = el
	}
	c.measureLocked(el.Value.(*entry[V]))
	c.boundLocked()
}

// Resize measures key's value again after it grew or shrank in place, and
// keeps the byte bound (the value itself may be dropped, when it is the
// least recently used).
func (c *Cache[V]) Resize(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok || c.size == nil {
		return
	}
	e := el.Value.(*entry[V])
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
	if el, ok := c.m[key]; ok {
		c.removeLocked(el)
	}
}

func (c *Cache[V]) removeLocked(el *list.Element) {
	e := c.order.Remove(el).(*entry[V])
	c.bytes -= e.bytes
	delete(c.m, e.key)
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
	for (len(c.m) > keepCount || c.bytes > keepBytes) && c.order.Len() > 0 {
		c.removeLocked(c.order.Back())
	}
}

// Len is the number of conversations held.
func (c *Cache[V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Sweep drops conversations idle since before now-idle: the list's back,
// up to the first one used since.
func (c *Cache[V]) Sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Back(); el != nil && now.Sub(el.Value.(*entry[V]).seen) > c.idle; el = c.order.Back() {
		c.removeLocked(el)
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
