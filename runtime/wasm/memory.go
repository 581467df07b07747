package wasm

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// allocator backs the linear memory of one execution and refuses to grow it
// past limit bytes: memory.grow then returns -1 to the guest, and the engine
// remembers that the limit was hit so that a guest that fails afterwards
// ends as MEMORY_LIMIT. wazero calls it through
// experimental.WithMemoryAllocator on the instantiation context, which is
// what makes the limit per execution while compiled modules stay shared by
// one wazero runtime.
type allocator struct {
	limit uint64
	pool  *bufferPool

	mu   sync.Mutex
	hit  bool
	peak uint64
	// refused is the largest memory size a grow asked for and was refused.
	refused uint64
}

// Allocate implements experimental.MemoryAllocator.
func (a *allocator) Allocate(_, max uint64) experimental.LinearMemory {
	capBytes := max
	if capBytes > a.limit {
		capBytes = a.limit
	}
	return &linearMemory{a: a, max: capBytes}
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

// linearMemory is one growable memory. wazero never shrinks memory. The
// bytes between len and cap of buf may hold data of an earlier execution
// (buffers are recycled through the engine's pool), so every region is
// cleared as it is exposed: a guest only ever sees zeroes or its own data.
type linearMemory struct {
	a   *allocator
	max uint64
	buf []byte
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
	if size > m.a.peak {
		m.a.peak = size
	}
	if m.buf == nil {
		m.buf = m.a.pool.get(size)
	}
	if size <= uint64(cap(m.buf)) {
		old := len(m.buf)
		m.buf = m.buf[:size]
		clear(m.buf[old:])
		return m.buf
	}
	// Grow by doubling (bounded by the memory's maximum and the limit) so a
	// guest growing page by page does not copy its memory every time.
	newCap := uint64(cap(m.buf)) * 2
	if newCap < size {
		newCap = size
	}
	if newCap > m.max {
		newCap = m.max
	}
	if newCap < size {
		newCap = size
	}
	nb := make([]byte, size, newCap)
	copy(nb, m.buf)
	m.buf = nb
	return m.buf
}

// Free implements experimental.LinearMemory. wazero calls it once the
// module is closed and no guest code runs any more, so the buffer can serve
// a later execution.
func (m *linearMemory) Free() {
	m.a.pool.put(m.buf)
	m.buf = nil
}

// maxPooledBytes bounds the buffers kept for reuse.
const maxPooledBytes = 64 << 20

// bufferPool recycles linear memory buffers between executions: a Go guest
// starts with several MiB of memory, and allocating (and collecting) them
// for every execution costs more than clearing a recycled one. A nil pool
// recycles nothing.
type bufferPool struct{ p sync.Pool }

// get returns a buffer of length 0 and capacity of at least size if the
// pool has one, else nil.
func (p *bufferPool) get(size uint64) []byte {
	if p == nil {
		return nil
	}
	for {
		v, _ := p.p.Get().(*[]byte)
		if v == nil {
			return nil
		}
		if uint64(cap(*v)) >= size {
			return (*v)[:0]
		}
		// Too small for this memory: leave it to the garbage collector.
	}
}

func (p *bufferPool) put(b []byte) {
	if p == nil || cap(b) == 0 || cap(b) > maxPooledBytes {
		return
	}
	p.p.Put(&b)
}
