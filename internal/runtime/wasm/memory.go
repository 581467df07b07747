package wasm

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// allocator backs the linear memory of one execution and refuses to grow it
// past limit bytes: memory.grow then returns -1 to the guest, and the engine
// remembers that the limit was hit so that a guest that fails afterwards
// ends as MEMORY_LIMIT. wazero calls it through
// experimental.WithMemoryAllocator on the instantiation context, which is
// what makes the limit per execution while compiled modules stay shared by
// one wazero runtime.
//
// The memory lives outside the Go heap, in a mapping reserved once for the
// largest memory the engine allows (see region): growing makes more of it
// accessible in place, so a grow never copies or clears memory the guest
// has not touched, and the pages a guest never touches are never resident.
// A guest that grows to its limit in big steps costs a few system calls,
// not gigabytes of copying, and reaches MEMORY_LIMIT at once.
type allocator struct {
	limit uint64
	pool  *regionPool

	mu   sync.Mutex
	hit  bool
	peak uint64
	// refused is the largest memory size a grow asked for and was refused.
	refused uint64
	// mems are the memories handed out, released together by release.
	mems []*linearMemory
}

// Allocate implements experimental.MemoryAllocator.
func (a *allocator) Allocate(_, max uint64) experimental.LinearMemory {
	// The limit is read under the lock: setLimit may change it (Started.Run).
	a.mu.Lock()
	defer a.mu.Unlock()
	m := &linearMemory{a: a, max: min(max, a.limit)}
	a.mems = append(a.mems, m)
	return m
}

// release gives the execution's memory back to the pool. The engine calls
// it once the execution's goroutine has left the guest for good, never
// earlier: wazero frees a memory when its module is closed, which a timeout
// or the runtime's Close may do while a host function still runs on the
// guest's goroutine and is about to write its results into that memory.
func (a *allocator) release() {
	a.mu.Lock()
	mems := a.mems
	a.mems = nil
	a.mu.Unlock()
	for _, m := range mems {
		m.a.mu.Lock()
		r := m.r
		m.r = nil
		m.a.mu.Unlock()
		if r != nil {
			a.pool.put(r)
		}
	}
}

func (a *allocator) limitHit() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hit
}

// refusedBytes returns the largest size a refused grow asked for: the
// observed value of a MEMORY_LIMIT breach.
func (a *allocator) refusedBytes() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refused
}

func (a *allocator) peakBytes() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

// peak64 is peakBytes as a Meter's Peak.
func (a *allocator) peak64() int64 { return int64(a.peakBytes()) }

// linearMemory is one growable memory. wazero never shrinks memory. A
// region recycled from an earlier execution may hold its data, so every
// part of it that may have been written is cleared as it is exposed: a
// guest only ever sees zeroes or its own data.
type linearMemory struct {
	a    *allocator
	max  uint64
	r    *region
	size uint64
}

// Reallocate implements experimental.LinearMemory.
func (m *linearMemory) Reallocate(size uint64) []byte {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	if size > m.a.limit {
		m.a.hit = true
		m.a.refused = max(m.a.refused, size)
		return nil
	}
	if size > m.max {
		return nil
	}
	if m.r == nil {
		r, err := m.a.pool.get(m.max)
		if err != nil {
			// The host refused the address space: the guest sees a failed
			// grow like any other.
			return nil
		}
		m.r = r
	}
	if !m.r.expose(m.size, size) {
		return nil
	}
	m.size = max(m.size, size)
	if size > m.a.peak {
		m.a.peak = size
	}
	return m.r.mem[:size:size]
}

// Free implements experimental.LinearMemory. It does nothing: the region
// stays mapped until the engine releases the execution's memory
// (allocator.release), because wazero may call Free while a host function
// still uses the memory.
func (*linearMemory) Free() {}

// region is a mapping of address space for one linear memory: readable and
// writable up to rw, inaccessible beyond, and possibly non-zero up to dirty.
type region struct {
	mem   []byte
	rw    uint64
	dirty uint64
}

// osPage is the granularity of protection changes.
var osPage = uint64(unix.Getpagesize())

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }

// expose makes bytes [from, to) usable and zero.
func (r *region) expose(from, to uint64) bool {
	if to > uint64(len(r.mem)) {
		return false
	}
	if to > r.rw {
		end := min(roundUp(to, osPage), uint64(len(r.mem)))
		if unix.Mprotect(r.mem[r.rw:end], unix.PROT_READ|unix.PROT_WRITE) != nil {
			return false
		}
		r.rw = end
	}
	if from < r.dirty {
		clear(r.mem[from:min(to, r.dirty)])
	}
	r.dirty = max(r.dirty, to)
	return true
}

// regionPool reserves regions of reserve bytes and keeps a few freed ones
// for reuse: a Go guest starts with several MiB of memory, and clearing a
// recycled region costs less than faulting fresh pages in for every
// execution. What a pooled region keeps resident is bounded by keepBytes;
// the rest goes back to the system when it is freed.
type regionPool struct {
	reserve uint64

	mu     sync.Mutex
	free   []*region
	closed bool
}

// maxWasm32Memory is the most linear memory a wasm32 module can address.
const maxWasm32Memory = 1 << 32

const (
	// keepBytes is what a pooled region keeps resident (and dirty).
	keepBytes = 16 << 20
	// maxPooled bounds the regions kept for reuse.
	maxPooled = 8
)

// get returns a region of at least n bytes. A nil pool maps a region of
// exactly n bytes and recycles nothing.
func (p *regionPool) get(n uint64) (*region, error) {
	size := roundUp(n, osPage)
	if p != nil && n <= p.reserve {
		p.mu.Lock()
		if k := len(p.free); k > 0 {
			r := p.free[k-1]
			p.free = p.free[:k-1]
			p.mu.Unlock()
			return r, nil
		}
		p.mu.Unlock()
		size = roundUp(p.reserve, osPage)
	}
	if size == 0 {
		size = osPage
	}
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	return &region{mem: mem}, nil
}

// put takes a freed region back: pooled with at most keepBytes resident,
// or unmapped.
func (p *regionPool) put(r *region) {
	if p == nil {
		_ = unix.Munmap(r.mem)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || uint64(len(r.mem)) != roundUp(p.reserve, osPage) || len(p.free) >= maxPooled {
		_ = unix.Munmap(r.mem)
		return
	}
	if r.dirty > keepBytes {
		// Give the pages back; they read as zeroes if touched again.
		_ = unix.Madvise(r.mem[keepBytes:roundUp(r.dirty, osPage)], unix.MADV_DONTNEED)
		r.dirty = keepBytes
	}
	p.free = append(p.free, r)
}

// close unmaps the pooled regions.
func (p *regionPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.free {
		_ = unix.Munmap(r.mem)
	}
	p.free = nil
	p.closed = true
}

// size returns the bytes of memory the execution holds now.
func (a *allocator) size() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n uint64
	for _, m := range a.mems {
		n += m.size
	}
	return n
}

// setLimit lowers or raises the limit of an execution whose memories
// were allocated ahead of its job (Started.Run); it refuses, changing
// nothing, when they already hold more than limit.
func (a *allocator) setLimit(limit uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n uint64
	for _, m := range a.mems {
		n += m.size
	}
	if n > limit {
		return false
	}
	a.limit = limit
	return true
}
