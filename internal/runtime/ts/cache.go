package ts

import (
	"container/list"
	"crypto/sha256"
	"errors"
	"sync"
)

// defaultCacheSize is the number of programs a cache keeps when newCache is
// given a size below 1.
const defaultCacheSize = 256

// cache keeps transpiled programs, and the syntax errors of scripts that do
// not transpile, keyed by the SHA-256 of the source. It evicts the least
// recently used entry beyond its size. It is safe for concurrent use; a
// source being transpiled by one goroutine is waited for, not transpiled
// again, by the others.
type cache struct {
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
	prog *program
	err  error
}

// cacheStats counts the lookups of a cache.
type cacheStats struct {
	// Hits is the number of transpile calls served from the cache.
	Hits uint64
	// Misses is the number of transpile calls that ran esbuild.
	Misses uint64
	// Len is the number of entries held.
	Len int
}

// newCache returns a cache that holds up to size programs (defaultCacheSize
// if size < 1).
func newCache(size int) *cache {
	if size < 1 {
		size = defaultCacheSize
	}
	return &cache{size: size, order: list.New(), entries: make(map[[sha256.Size]byte]*list.Element)}
}

// transpile returns the program for src, from the cache when it was
// transpiled before. Syntax errors are cached like programs; other
// (internal) errors are not.
func (c *cache) transpile(src string) (*program, error) {
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
	e.prog, e.err = transpile(src)
	close(e.done)

	var se *syntaxError
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
func (c *cache) stats() cacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cacheStats{Hits: c.hits, Misses: c.misses, Len: c.order.Len()}
}
