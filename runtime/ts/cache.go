package ts

import (
	"container/list"
	"crypto/sha256"
	"errors"
	"sync"
)

// DefaultCacheSize is the number of programs a Cache keeps when NewCache is
// given a size below 1.
const DefaultCacheSize = 256

// Cache keeps transpiled programs, and the syntax errors of scripts that do
// not transpile, keyed by the SHA-256 of the source. It evicts the least
// recently used entry beyond its size. It is safe for concurrent use; a
// source being transpiled by one goroutine is waited for, not transpiled
// again, by the others.
type Cache struct {
	mu      sync.Mutex
	size    int
	order   *list.List // of *entry, most recently used first
	entries map[[sha256.Size]byte]*list.Element
	hits    uint64
	misses  uint64
}

// entry is one cached source. done is closed once prog and err are set.
type entry struct {
	key  [sha256.Size]byte
	done chan struct{}
	prog *Program
	err  error
}

// CacheStats counts the lookups of a Cache.
type CacheStats struct {
	// Hits is the number of Transpile calls served from the cache.
	Hits uint64
	// Misses is the number of Transpile calls that ran esbuild.
	Misses uint64
	// Len is the number of entries held.
	Len int
}

// NewCache returns a cache that holds up to size programs (DefaultCacheSize
// if size < 1).
func NewCache(size int) *Cache {
	if size < 1 {
		size = DefaultCacheSize
	}
	return &Cache{size: size, order: list.New(), entries: make(map[[sha256.Size]byte]*list.Element)}
}

// Transpile returns the program for src, from the cache when it was
// transpiled before. Syntax errors are cached like programs; other
// (internal) errors are not.
func (c *Cache) Transpile(src string) (*Program, error) {
	key := sha256.Sum256([]byte(src))
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		c.hits++
		e := el.Value.(*entry)
		c.mu.Unlock()
		<-e.done
		return e.prog, e.err
	}
	c.misses++
	e := &entry{key: key, done: make(chan struct{})}
	c.entries[key] = c.order.PushFront(e)
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*entry).key)
	}
	c.mu.Unlock()

	// This goroutine owns e until done is closed; waiters only read it
	// after that.
	e.prog, e.err = Transpile(src)
	close(e.done)

	var se *SyntaxError
	if e.err != nil && !errors.As(e.err, &se) {
		c.mu.Lock()
		if el, ok := c.entries[key]; ok && el.Value.(*entry) == e {
			c.order.Remove(el)
			delete(c.entries, key)
		}
		c.mu.Unlock()
	}
	return e.prog, e.err
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits, Misses: c.misses, Len: c.order.Len()}
}
