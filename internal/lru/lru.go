// Package lru is a small, bounded, concurrency-safe least-recently-used
// cache used for compiled scripts and modules.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values, evicting the least recently used entry when
// it holds more than its capacity. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	mu    sync.Mutex
	cap   int
	ll    *list.List
	items map[K]*list.Element
	hits  uint64
	miss  uint64
	evict func(K, V)
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// New returns a cache holding at most capacity entries (at least 1).
// onEvict, when not nil, is called (with the lock held) for each evicted entry.
func New[K comparable, V any](capacity int, onEvict func(K, V)) *Cache[K, V] {
	if capacity < 1 {
		capacity = 1
	}
	return &Cache[K, V]{cap: capacity, ll: list.New(), items: map[K]*list.Element{}, evict: onEvict}
}

// Get returns the value for key and marks it recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.MoveToFront(el)
		c.hits++
		return el.Value.(*entry[K, V]).val, true
	}
	c.miss++
	var zero V
	return zero, false
}

// Add stores val under key, evicting the oldest entries beyond capacity.
func (c *Cache[K, V]) Add(key K, val V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.MoveToFront(el)
		el.Value.(*entry[K, V]).val = val
		return
	}
	c.items[key] = c.ll.PushFront(&entry[K, V]{key, val})
	for c.ll.Len() > c.cap {
		old := c.ll.Back()
		e := old.Value.(*entry[K, V])
		c.ll.Remove(old)
		delete(c.items, e.key)
		if c.evict != nil {
			c.evict(e.key, e.val)
		}
	}
}

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// Stats returns the hit and miss counts of Get.
func (c *Cache[K, V]) Stats() (hits, misses uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.miss
}
