package wasm

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/tetratelabs/wazero"
)

// entry is one module in the cache. While done is open the module is being
// compiled; afterwards compiled (or err) is set. refs counts the executions
// using it: an evicted entry is closed when the last one ends.
type entry struct {
	hash     string
	done     chan struct{}
	compiled wazero.CompiledModule
	shape    moduleShape
	err      error
	// stop cancels the compilation; release calls it when the last
	// execution waiting for a module still being compiled gives up.
	stop context.CancelFunc

	// cost is what the compiled module is reckoned to take (see
	// compiledCost), counted against Config.MaxCacheBytes.
	cost    int64
	refs    int
	evicted bool
	elem    *list.Element
}

// compiledCostFactor is what a compiled module takes per byte of its
// binary: wazero's machine code for a Go guest of 3.3 MB took 12.8 MiB of
// executable mappings (3.9 bytes a byte), and the decoded module (its
// data segments, types, function metadata) about one more.
const compiledCostFactor = 5

// compiledCost reckons what the compiled form of a module of n bytes
// takes in memory. wazero does not report it.
func compiledCost(n int) int64 { return int64(n) * compiledCostFactor }

// hashOf returns the cache key of a module: the hex SHA-256 of its bytes.
func hashOf(module []byte) string {
	sum := sha256.Sum256(module)
	return hex.EncodeToString(sum[:])
}

// acquire returns the compiled module for bin, compiling it at most once
// however many executions ask at the same time, and holds a reference that
// release gives back. The waiting is bounded by ctx; the compilation runs
// in its own goroutine, bounded by the compile timeout, and is stopped
// when every caller waiting for it has given up (wazero stops between two
// functions).
func (e *Engine) acquire(ctx context.Context, bin []byte) (*entry, error) {
	if len(bin) > e.opts.MaxModuleBytes {
		return nil, fmt.Errorf("%w: module is %d bytes, more than the %d allowed", ErrInvalidModule, len(bin), e.opts.MaxModuleBytes)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hash := hashOf(bin)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if ent, ok := e.entries[hash]; ok {
		return e.awaitHeld(ctx, ent)
	}
	cctx, stop := context.WithTimeout(context.Background(), e.opts.Bounds.CompileTimeout)
	ent := &entry{hash: hash, done: make(chan struct{}), refs: 1, stop: stop}
	e.entries[hash] = ent
	// Close waits for compilations in flight: wazero must not compile on
	// a closed runtime.
	e.compiling.Add(1)
	e.mu.Unlock()

	// The compile goroutine ends when wazero returns, at the latest soon
	// after cctx ends; it owns a copy of the bytes so the caller may reuse
	// its slice, and it closes ent.done.
	own := append([]byte(nil), bin...)
	go func() {
		defer e.compiling.Done()
		defer stop()
		e.compile(cctx, ent, own)
	}()

	select {
	case <-ent.done:
	case <-ctx.Done():
		e.release(ent)
		return nil, ctx.Err()
	}
	if ent.err != nil {
		e.release(ent)
		return nil, ent.err
	}
	return ent, nil
}

// compile fills ent and publishes it: on success into the LRU (evicting the
// least recently used modules over the bound), on failure out of the map so
// that the next attempt compiles again.
func (e *Engine) compile(ctx context.Context, ent *entry, bin []byte) {
	compiled, shape, err := e.compileModule(ctx, bin)
	e.compiles.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	defer close(ent.done)
	ent.compiled, ent.shape, ent.err = compiled, shape, err
	switch {
	case err != nil:
		if e.entries[ent.hash] == ent {
			delete(e.entries, ent.hash)
		}
	case e.closed:
		ent.err = ErrClosed
		ent.evicted = true
	case e.entries[ent.hash] != ent:
		// Abandoned by every caller (see release): no one can use it.
		_ = compiled.Close(context.Background())
		ent.compiled, ent.err = nil, ErrClosed
	default:
		ent.cost = compiledCost(len(bin))
		ent.elem = e.lru.PushFront(ent)
		e.cachedBytes += ent.cost
		// The newest module stays, whatever it costs: it is about to run.
		for e.lru.Len() > 1 && (e.lru.Len() > e.opts.MaxModules || e.cachedBytes > e.opts.MaxCacheBytes) {
			old := e.lru.Back().Value.(*entry)
			e.evictLocked(old)
		}
	}
}

// evictLocked removes ent from the cache; its compiled code is closed now
// if no execution uses it, else by the last release.
func (e *Engine) evictLocked(ent *entry) {
	if ent.elem != nil {
		e.lru.Remove(ent.elem)
		ent.elem = nil
		e.cachedBytes -= ent.cost
	}
	delete(e.entries, ent.hash)
	ent.evicted = true
	e.evictions.Add(1)
	if ent.refs == 0 && ent.compiled != nil {
		_ = ent.compiled.Close(context.Background())
		ent.compiled = nil
	}
}

// release gives back a reference taken by acquire or acquireHash. The
// last reference given back while the module is still being compiled
// stops the compilation and takes the entry out of the cache, so that a
// later request compiles afresh.
func (e *Engine) release(ent *entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ent.refs--
	if ent.refs == 0 && ent.stop != nil {
		select {
		case <-ent.done:
		default:
			ent.stop()
			if e.entries[ent.hash] == ent {
				delete(e.entries, ent.hash)
			}
		}
	}
	if ent.refs == 0 && ent.evicted && ent.compiled != nil {
		_ = ent.compiled.Close(context.Background())
		ent.compiled = nil
	}
}

// acquireHash returns the cached module with the given hash, or false.
func (e *Engine) acquireHash(ctx context.Context, hash string) (*entry, bool, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, false, ErrClosed
	}
	ent, ok := e.entries[hash]
	if !ok {
		e.mu.Unlock()
		return nil, false, nil
	}
	ent, err := e.awaitHeld(ctx, ent)
	return ent, true, err
}

// awaitHeld takes a reference on a cached entry (e.mu held on entry,
// released here), waits for its compilation and counts a hit; on failure
// the reference is given back.
func (e *Engine) awaitHeld(ctx context.Context, ent *entry) (*entry, error) {
	ent.refs++
	if ent.elem != nil {
		e.lru.MoveToFront(ent.elem)
	}
	e.mu.Unlock()
	select {
	case <-ent.done:
	case <-ctx.Done():
		e.release(ent)
		return nil, ctx.Err()
	}
	if ent.err != nil {
		e.release(ent)
		return nil, ent.err
	}
	e.hits.Add(1)
	return ent, nil
}
