package index

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// Cache bounds how many sealed (read-only) indexes, or .log files mapped for
// their batch headers (LogMap), are memory-mapped at once across a log,
// unmapping the least recently used. A log with 10,000 sealed
// segments thus costs no mappings until they are read, and a bounded number
// afterwards (each mapping also holds a file descriptor).
//
// Writable (active) indexes are never counted or evicted: they stay mapped
// while they are appended to.
//
// A nil *Cache is valid and means "unbounded": indexes are still mapped
// lazily on first use but never unmapped until sealed state changes or they
// are closed.
type Cache struct {
	max int

	// mu guards lru and every member's elem. Holders of mu never block on an
	// index's lock (they only TryLock), so an index may call into the Cache
	// while holding its own lock.
	mu  sync.Mutex
	lru list.List // of member; front = most recently used

	// tick advances on every reordering; an index whose stamp equals tick is
	// already at the front, so repeated lookups on one index skip mu.
	tick      atomic.Uint64
	maps      atomic.Uint64
	evictions atomic.Uint64
	// over is set while more members are held than max because the ones
	// an eviction pass met were in use; settle retries when a use ends, so
	// an idle Cache returns to its bound without waiting for a new mapping.
	over atomic.Bool
}

// CacheStats is a snapshot of a Cache's counters.
type CacheStats struct {
	// Mapped is the number of sealed indexes mapped now.
	Mapped int
	// Maps counts lazy mappings of sealed indexes since the Cache was made.
	Maps uint64
	// Evictions counts indexes unmapped to respect the bound.
	Evictions uint64
}

// NewCache returns a Cache that keeps at most maxMapped sealed indexes
// mapped; maxMapped <= 0 means unbounded (but counted).
//
// The bound can be exceeded briefly when every mapped index is in use by a
// concurrent lookup: an index is never unmapped under a reader, and the
// excess is evicted as soon as a use ends or by a later mapping.
func NewCache(maxMapped int) *Cache {
	return &Cache{max: maxMapped}
}

// Stats returns the current counters. A nil Cache reports zeros.
func (c *Cache) Stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	n := c.lru.Len()
	c.mu.Unlock()
	return CacheStats{Mapped: n, Maps: c.maps.Load(), Evictions: c.evictions.Load()}
}

// member is what a Cache holds: a lazily mapped file (an index, a LogMap).
type member interface {
	link() *cacheLink
	// tryEvict unmaps the member unless it is in use (its lock is held)
	// and reports whether it did. The caller holds the Cache's mu.
	tryEvict() bool
}

// cacheLink is a member's place in a Cache.
type cacheLink struct {
	elem  *list.Element // position in Cache.lru; guarded by Cache.mu
	stamp atomic.Uint64 // Cache.tick when last moved to the front
}

// admit records that x was just mapped and evicts others over the bound.
// The caller holds x's lock exclusively.
func (c *Cache) admit(x member) {
	if c == nil {
		return
	}
	c.maps.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	l := x.link()
	if l.elem == nil {
		l.elem = c.lru.PushFront(x)
	} else {
		c.lru.MoveToFront(l.elem)
	}
	l.stamp.Store(c.tick.Add(1))
	c.evictLocked(x)
}

// evictLocked evicts least recently used members, skipping keep and any in
// use, until the bound holds, and records whether it still does not. The
// caller holds mu.
func (c *Cache) evictLocked(keep member) {
	if c.max <= 0 || c.lru.Len() <= c.max {
		c.over.Store(false)
		return
	}
	// Raised before the pass, not only after: a member released after
	// this pass found it in use then sees it and settles once mu is free.
	c.over.Store(true)
	for e := c.lru.Back(); e != nil && c.lru.Len() > c.max; {
		prev := e.Prev()
		y := e.Value.(member)
		// tryEvict fails while a lookup holds y (or y is mid-operation);
		// skipping it keeps mappings valid under readers.
		if y != keep && y.tryEvict() {
			c.lru.Remove(e)
			y.link().elem = nil
			c.evictions.Add(1)
		}
		e = prev
	}
	c.over.Store(c.lru.Len() > c.max)
}

// settle evicts the excess an earlier pass had to leave because its
// members were in use. Members call it after letting go of their own lock;
// it costs one atomic load while the Cache is within its bound.
func (c *Cache) settle() {
	if c == nil || !c.over.Load() {
		return
	}
	c.mu.Lock()
	c.evictLocked(nil)
	c.mu.Unlock()
}

// touch marks x as most recently used. The caller holds x's lock (shared).
func (c *Cache) touch(x member) {
	l := x.link()
	if c == nil || l.stamp.Load() == c.tick.Load() {
		return
	}
	c.mu.Lock()
	if l.elem != nil {
		c.lru.MoveToFront(l.elem)
		l.stamp.Store(c.tick.Add(1))
	}
	c.mu.Unlock()
}

// forget removes x from the Cache. The caller holds x's lock exclusively.
func (c *Cache) forget(x member) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if l := x.link(); l.elem != nil {
		c.lru.Remove(l.elem)
		l.elem = nil
	}
	c.mu.Unlock()
}
