package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/lru"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// Compiling a request's module in a worker. A supervisor checks a
// WebAssembly module when it checks the request, so that an invalid one
// is refused before it runs; wazero's decoding, validation and
// compilation of untrusted bytes then happen in a worker process, under
// its RLIMIT_DATA (narrowed to wasm.Bounds.CompileMemoryBytes for the
// compile), its seccomp filter and Landlock rules, and the compile
// timeout, after which the supervisor kills it — never in the
// supervisor's own address space. Only the structure check
// (wasm.Config.CheckModule, a linear scan) runs in the supervisor.
//
// A module compiled once is not compiled again to check it: the pool
// remembers the hashes of the modules it has checked (maxCheckedModules,
// least recently used first out) and keeps their bytes for the workers
// (modules), and the worker that compiled it holds it compiled for the
// execution that follows.

// maxCheckedModules bounds the hashes of checked modules the pool
// remembers (64 bytes each).
const maxCheckedModules = 4096

// MaxOwnerCompiles bounds the distinct modules one owner (a tenant, see
// WithCompileOwner) has compiling or waiting for a compile slot at once;
// a request for a module already compiling joins it, and one the pool
// checked before compiles nothing. A module is compiled before its
// request is admitted (an invalid one is refused without a slot), so the
// tenant's admission quota does not bound these: without this bound one
// tenant's slow modules queued ahead of every other tenant's (a 50-byte
// module waited 48 s behind ten), each request holding its module's
// bytes as it waited.
const MaxOwnerCompiles = 4

// compiler is the pool's side of compiling modules to check them: at
// most MaxConcurrentCompiles at once, one compile per module however many
// requests ask for it together, stopped when all of them gave up.
type compiler struct {
	slots *fairSlots

	mu       sync.Mutex
	inflight map[string]*compileCall
	checked  *lru.Cache[string, struct{}]
	// owned counts the inflight compiles by the owner that started them.
	owned map[string]int

	// cfg is the pool's engine configuration, its defaults filled.
	cfg wasm.Config

	compiles atomic.Int64
	hits     atomic.Int64
	// lastPID is the pid of the worker that compiled last; sent, when
	// set (tests), is called once a worker was sent a module.
	lastPID atomic.Int64
	sent    func()
}

// compileCall is one module being compiled for the requests waiting for
// it; refs counts them, and the last to give up calls stop.
type compileCall struct {
	done chan struct{}
	err  error
	refs int
	stop context.CancelFunc
}

func newCompiler(cfg wasm.Config) *compiler {
	cfg = cfg.WithDefaults()
	return &compiler{cfg: cfg, slots: newFairSlots(cfg.Bounds.MaxConcurrentCompiles), inflight: map[string]*compileCall{}, owned: map[string]int{},
		checked: lru.New[string, struct{}](maxCheckedModules, nil)}
}

// errNoWorkers is the error of CompileModule on a pool that has no
// worker processes.
var errNoWorkers = errors.New("worker: an in-process pool compiles no modules; use the wasm engine")

// CompileModule checks a WebAssembly module for a request and returns
// its hex SHA-256: the structure check here, then wazero's compile in a
// worker process (see above), unless this pool has checked the module
// before. Errors wrap wasm.ErrInvalidModule for a module the engine
// cannot run (with the engine's own message), wasm.ErrCompileLimit for
// one whose compile took more than the compile timeout or the compile
// memory bound (its worker is stopped) or was stopped because every
// request waiting for it gave up, or are ctx's error when the caller gave
// up first. The module's bytes are kept for the workers: a later request
// may name it by hash (HasModule).
func (p *Pool) CompileModule(ctx context.Context, module []byte) (string, error) {
	if p.cfg.Mode != ModeWorker {
		return "", errNoWorkers
	}
	c := p.compiler
	if len(module) > c.cfg.MaxModuleBytes {
		return "", c.cfg.CheckModule(module)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(module)
	hash := hex.EncodeToString(sum[:])
	if c.isChecked(hash) {
		// Checked before, under the same bounds: no scan, no compile.
		c.hits.Add(1)
		p.modules.keep(hash, module)
		return hash, nil
	}
	if err := c.cfg.CheckModule(module); err != nil {
		return "", err
	}
	owner := ownerOf(ctx)
	call, cctx, err := c.begin(owner, hash)
	if err != nil {
		return "", err
	}
	if cctx != nil {
		// The compile goroutine owns a copy of the bytes; it ends when
		// its worker answers or is killed (at the compile timeout, when
		// every caller gave up, or when the pool closes), and closes
		// call.done.
		own := append([]byte(nil), module...)
		go func() {
			defer call.stop()
			err := p.compileIn(cctx, owner, hash, own)
			if err == nil {
				p.modules.keep(hash, own)
			}
			c.end(owner, hash, call, err)
		}()
	}
	select {
	case <-call.done:
	case <-ctx.Done():
		c.leave(hash, call)
		return "", ctx.Err()
	}
	if call.err != nil {
		return "", call.err
	}
	return hash, nil
}

// begin returns the compile of hash for owner to wait for: the one in
// flight, or a new one, with the context the caller runs it in (nil when
// it joined one in flight). An owner that has MaxOwnerCompiles in flight
// gets an error wrapping wasm.ErrCompileLimit instead of a new one.
func (c *compiler) begin(owner, hash string) (*compileCall, context.Context, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if call, ok := c.inflight[hash]; ok {
		call.refs++
		c.hits.Add(1)
		return call, nil, nil
	}
	if c.owned[owner] >= MaxOwnerCompiles {
		return nil, nil, fmt.Errorf("%w: %d modules of this caller are already compiling or waiting to; send this one again once one of them is done",
			wasm.ErrCompileLimit, MaxOwnerCompiles)
	}
	cctx, stop := context.WithTimeout(context.Background(), c.cfg.Bounds.CompileTimeout)
	call := &compileCall{done: make(chan struct{}), refs: 1, stop: stop}
	c.inflight[hash] = call
	c.owned[owner]++
	return call, cctx, nil
}

// end ends a compile begin started, with its error: the owner's count
// goes down, and a module compiled is remembered as checked.
func (c *compiler) end(owner, hash string, call *compileCall, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owned[owner]--; c.owned[owner] <= 0 {
		delete(c.owned, owner)
	}
	call.err = err
	if c.inflight[hash] == call {
		delete(c.inflight, hash)
	}
	if err == nil {
		c.checked.Add(hash, struct{}{})
	}
	close(call.done)
}

// isChecked reports whether the module with the given hash was checked.
func (c *compiler) isChecked(hash string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.checked.Get(hash)
	return ok
}

// leave gives back a caller's interest in a compile; the last one gone
// stops it (its worker is killed) and forgets it, so that a later request
// compiles afresh.
func (c *compiler) leave(hash string, call *compileCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	call.refs--
	if call.refs > 0 {
		return
	}
	select {
	case <-call.done:
	default:
		call.stop()
		if c.inflight[hash] == call {
			delete(c.inflight, hash)
		}
	}
}

// HasModule reports whether the pool has checked the module with the
// given hex SHA-256 and still keeps its bytes for the workers, so that a
// request may name it by hash.
func (p *Pool) HasModule(hash string) bool {
	if p.cfg.Mode != ModeWorker {
		return false
	}
	hash = strings.ToLower(hash)
	return p.compiler.isChecked(hash) && p.modules.get(hash) != nil
}

// compileIn compiles bin for owner (the first caller's, see
// WithCompileOwner) in a worker, waiting for a compile slot and a worker
// within ctx (the compile timeout, cancelled when every caller gave up).
func (p *Pool) compileIn(ctx context.Context, owner, hash string, bin []byte) error {
	if err := p.compiler.slots.acquire(ctx, owner); err != nil {
		return p.compileStopped(ctx)
	}
	defer p.compiler.slots.release(owner)
	w, err := p.acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return p.compileStopped(ctx)
		}
		return fmt.Errorf("no worker process could compile the module: %w", err)
	}
	if ctx.Err() != nil {
		p.release(w, true)
		return p.compileStopped(ctx)
	}
	p.compiler.compiles.Add(1)
	p.compiler.lastPID.Store(int64(w.pid))
	job := &ptcruntime.Job{ExecutionID: "compile:" + hash[:16], Language: core.LanguageWASM}
	job.Limits.MemoryBytes = p.compiler.cfg.Bounds.CompileMemoryBytes
	es := newExecState(ctx, job, 0)
	es.wasm = true
	if !w.register(es) {
		p.release(w, false)
		return errors.New("the worker process ended before it compiled the module; send the request again")
	}
	alive, err := w.compileChecked(ctx, es, hash, bin)
	es.tctx.end(context.Canceled)
	w.unregister(es)
	if err == nil {
		w.sent(hash)
	}
	p.release(w, alive)
	return err
}

// compileChecked sends worker w the module and waits for its answer,
// within ctx: when ctx ends first the worker is killed. alive reports
// whether the worker may serve on.
func (w *proc) compileChecked(ctx context.Context, es *execState, hash string, bin []byte) (alive bool, err error) {
	c := &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Compile{Compile: &wp.Compile{Slot: es.slot, Module: bin}}}
	if err := w.send(es.lane, c); err != nil {
		return false, w.compileDeath(<-es.done)
	}
	if w.pool.compiler.sent != nil {
		w.pool.compiler.sent()
	}
	var f wp.WorkerFrame
	err = es.mb.Next(ctx, func(b []byte) error { return proto.Unmarshal(b, &f) })
	switch {
	case err != nil && ctx.Err() != nil:
		// The worker is busy compiling for requests that gave up, or
		// past the compile timeout: stop it.
		w.killFor(es, fault.KindCancelled)
		<-es.done
		return false, w.pool.compileStopped(ctx)
	case err != nil:
		w.kill()
		return false, w.compileDeath(<-es.done)
	}
	r := f.GetCompiled()
	if r == nil || r.GetSlot() != es.slot || (r.GetError() == "" && r.GetModuleSha256() != hash) {
		w.stop(stopBroken, "it answered a compile with a frame that does not fit")
		<-es.done
		return false, errors.New("the worker process compiling the module broke the frame protocol; send the request again")
	}
	switch msg := r.GetError(); {
	case r.GetInvalid():
		// The engine's own words, as in-process.
		return true, fmt.Errorf("%w: %s", wasm.ErrInvalidModule, strings.TrimPrefix(msg, wasm.ErrInvalidModule.Error()+": "))
	case strings.HasPrefix(msg, wasm.ErrCompileLimit.Error()+": "):
		return true, fmt.Errorf("%w: %s", wasm.ErrCompileLimit, strings.TrimPrefix(msg, wasm.ErrCompileLimit.Error()+": "))
	case msg != "":
		return true, fmt.Errorf("the worker process could not compile the module: %s", msg)
	}
	return true, nil
}

// compileDeath is the error of a compile whose worker died: out of its
// compile memory bound, ErrCompileLimit; the pool shut down, or any other
// end (killed from outside, a crash), an error of the server's own that
// a server reports as unavailable.
func (w *proc) compileDeath(out *ptcruntime.Outcome) error {
	lim := w.pool.compiler.cfg.Bounds.CompileMemoryBytes
	if cause, _ := deathOf(w.stderr.String()); cause == causeMemory {
		return fmt.Errorf("%w: the module took more than %s of memory to compile; send a smaller module", wasm.ErrCompileLimit, byteSize(lim))
	}
	if out == nil || out.Err == nil {
		return errors.New("the worker process compiling the module ended unexpectedly; send the request again")
	}
	if out.Err.Kind == fault.KindCancelled {
		return fmt.Errorf("the module was not compiled: %s", out.Err.Message)
	}
	return fmt.Errorf("the worker process compiling the module ended unexpectedly; send the request again: %w", out.Err)
}

// compileStopped is the error of a compile that ctx ended: the compile
// timeout, or every caller giving up (the engine's words).
func (p *Pool) compileStopped(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: the module took more than %s to compile; send a smaller module", wasm.ErrCompileLimit, p.compiler.cfg.Bounds.CompileTimeout)
	}
	return fmt.Errorf("%w: its compilation was stopped: every request waiting for it gave up", wasm.ErrCompileLimit)
}
