package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// WebAssembly in worker processes. A guest in a worker runs without the
// per-loop checks that let a cancelled context stop a guest in-process
// (wasm.Config.NoLoopChecks): tight loops run several times faster, and
// the worker is what stops a guest that does not stop — the supervisor
// kills it at the execution's deadline (no grace: a guest cannot be
// interrupted), at the grace after a cancel, and at once when the worker
// reports a CPU breach (its thread's CPU clock, as for JavaScript). Go
// cannot preempt a goroutine inside compiled guest code, so a garbage
// collection that starts while a guest computes waits for the guest, and
// the worker's watchdog with it: the supervisor therefore also reads the
// lane thread's CPU clock itself (watchCPU) and stops a guest over its
// CPU limit without the worker's help. Memory
// is the engine's own limit (a refused memory.grow), with RLIMIT_DATA
// behind it.
//
// Modules travel by hash: an Execute frame carries the module's SHA-256.
// Before it, when the worker may not hold the module (it has not been sent
// it, or said it had not kept it), a Compile frame gives it the bytes and
// the supervisor waits for the Compiled answer: compiling (about 2 s for a
// Go guest) is not the execution's time, as in-process, where the module
// is compiled when the request is checked. Usually the worker holds it
// already: the worker that compiled the module to check the request
// (compile.go) is the one the pool picks next. The worker keeps up to
// maxWorkerModules compiled modules.

// maxWorkerModules bounds the compiled modules one worker keeps (a
// compiled Go guest takes tens of MiB of machine code).
const maxWorkerModules = 8

// isWASM reports whether a job runs a WebAssembly module: by its
// language, or, when that is not set, by holding a module and no source.
// A JavaScript job that also carries module bytes runs its source.
func isWASM(job *ptcruntime.Job) bool {
	switch job.Language {
	case core.LanguageWASM:
		return true
	case core.LanguageUnspecified:
		return job.Source == "" && (len(job.Module) > 0 || job.ModuleSHA256 != "")
	}
	return false
}

// moduleHash returns the hex SHA-256 of a job's module.
func moduleHash(job *ptcruntime.Job) string {
	if job.ModuleSHA256 != "" {
		return job.ModuleSHA256
	}
	sum := sha256.Sum256(job.Module)
	return hex.EncodeToString(sum[:])
}

// modules keeps the bytes of recently run modules in the supervisor, so
// that a job that names its module by hash can be sent to a worker that
// has not compiled it. It is bounded in entries and in bytes; the most
// recently used come first.
type modules struct {
	mu    sync.Mutex
	list  []module
	bytes int64
	max   int64
}

type module struct {
	hash string
	bin  []byte
}

// maxKeptModules bounds the modules whose bytes the supervisor keeps.
const maxKeptModules = 16

// keep remembers a module's bytes.
func (m *modules) keep(hash string, b []byte) {
	if int64(len(b)) > m.max {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.touchLocked(hash) != nil {
		return
	}
	m.list = append([]module{{hash, b}}, m.list...)
	m.bytes += int64(len(b))
	for len(m.list) > 1 && (m.bytes > m.max || len(m.list) > maxKeptModules) {
		last := m.list[len(m.list)-1]
		m.list = m.list[:len(m.list)-1]
		m.bytes -= int64(len(last.bin))
	}
}

// get returns a module's bytes, nil when they are not kept.
func (m *modules) get(hash string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.touchLocked(hash)
}

// touchLocked moves a kept module to the front and returns its bytes.
func (m *modules) touchLocked(hash string) []byte {
	for i, e := range m.list {
		if e.hash == hash {
			copy(m.list[1:i+1], m.list[:i])
			m.list[0] = e
			return e.bin
		}
	}
	return nil
}

// holds reports whether the worker was sent module hash (it may have
// dropped it since: it then says so and is sent the bytes again).
func (w *proc) holds(hash string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.modules {
		if h == hash {
			return true
		}
	}
	return false
}

// sent records that the worker was sent module hash; dropped forgets it.
func (w *proc) sent(hash string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.modules = append(w.modules, hash)
	if len(w.modules) > maxWorkerModules {
		w.modules = w.modules[1:]
	}
}

func (w *proc) dropped(hash string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, h := range w.modules {
		if h == hash {
			w.modules = append(w.modules[:i], w.modules[i+1:]...)
			return
		}
	}
}

// runWASM runs a WebAssembly job on a worker: with the module's bytes when
// the worker may not hold it, and once more with them when the worker
// says it does not.
func (p *Pool) runWASM(ctx context.Context, job *ptcruntime.Job) *ptcruntime.Outcome {
	hash := moduleHash(job)
	bin := job.Module
	if len(bin) > 0 {
		p.modules.keep(hash, bin)
	} else {
		bin = p.modules.get(hash)
	}
	m := wasmJob{hash: hash, bin: bin}
	out := p.runWorker(ctx, job, &m)
	if m.unknown && len(bin) > 0 && !m.resent {
		m.resent = true
		out = p.runWorker(ctx, job, &m)
	}
	if m.unknown {
		return &ptcruntime.Outcome{Err: fault.Wrap(fault.KindInternal, wasm.ErrUnknownModule,
			"the module was evicted from the server's cache before it ran; send the module bytes again")}
	}
	return out
}

// wasmJob is what the supervisor knows of a WebAssembly job's module.
type wasmJob struct {
	hash string
	bin  []byte
	// resent: the bytes were sent because the worker did not hold the
	// module; unknown: the worker's last answer was that it does not.
	resent, unknown bool
	// python: the module is the Python interpreter (python.go), of which
	// a worker keeps warm interpreters started ahead.
	python bool
	warm   int
}

// frame fills the module fields of an Execute frame.
func (m *wasmJob) frame(x *wp.Execute) {
	x.Language = wp.Language_LANGUAGE_WASM
	if m.python {
		x.Language = wp.Language_LANGUAGE_PYTHON
	}
	x.ModuleSha256 = m.hash
}

// compile has worker w compile the module for execution es when it may
// not hold it, and waits for its answer — bounded by ctx, not by the
// execution's timeout. A non-nil Outcome ends the execution.
func (w *proc) compile(ctx context.Context, es *execState, m *wasmJob) *ptcruntime.Outcome {
	if len(m.bin) == 0 || (!m.resent && w.holds(m.hash)) {
		return nil
	}
	if m.python {
		release, out := w.pool.pythonCompileSlot(ctx, es)
		if out != nil {
			return out
		}
		defer release()
	}
	c := &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Compile{Compile: &wp.Compile{Slot: es.slot, Module: m.bin,
		Python: m.python, PythonWarm: uint32(max(m.warm, 0))}}}
	if err := w.send(es.lane, c); err != nil {
		return <-es.done
	}
	wctx := ctx
	if m.python {
		// The interpreter is compiled once per worker and kept: a request
		// that ends meanwhile (its deadline, resumable executions' budget,
		// or its caller) waits for the compile rather than throw it away,
		// which would make every request too short for it fail alike.
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), pythonCompileTimeout)
		defer cancel()
	}
	var f wp.WorkerFrame
	err := es.mb.Next(wctx, func(b []byte) error { return proto.Unmarshal(b, &f) })
	switch {
	case err != nil && wctx.Err() != nil && m.python:
		w.killFor(es, fault.KindCancelled)
		<-es.done
		return &ptcruntime.Outcome{Err: fault.New(fault.KindInternal,
			"the worker did not compile the Python interpreter within %s; check the server's load and logs", pythonCompileTimeout)}
	case err != nil && ctx.Err() != nil:
		// The worker is busy compiling for an execution that will not
		// run: stop it.
		w.killFor(es, fault.KindCancelled)
		<-es.done
		return compileEnded(ctx, es, "the execution ran out of time while its module was compiled")
	case err != nil:
		w.kill()
		out := <-es.done
		if cause, _ := deathOf(w.stderr.String()); cause == causeMemory {
			// The compile, not the guest, ran out: as the engine words a
			// compile over its limit.
			err := w.compileDeath(out)
			msg := strings.TrimPrefix(err.Error(), wasm.ErrCompileLimit.Error()+": ")
			out = &ptcruntime.Outcome{Err: &fault.Error{Kind: fault.KindSyntax, Message: msg, Cause: wasm.ErrCompileLimit}}
		}
		return out
	}
	r := f.GetCompiled()
	if r == nil || r.GetSlot() != es.slot || (r.GetError() == "" && r.GetModuleSha256() != m.hash) {
		w.stop(stopBroken, "it answered a compile with a frame that does not fit")
		return <-es.done
	}
	switch {
	case r.GetInvalid():
		// As the engine says in-process (a server refuses such a module
		// when it checks the request).
		msg := strings.TrimPrefix(r.GetError(), wasm.ErrInvalidModule.Error()+": ")
		return &ptcruntime.Outcome{Err: &fault.Error{Kind: fault.KindSyntax, Message: msg, Cause: wasm.ErrInvalidModule}}
	case strings.HasPrefix(r.GetError(), wasm.ErrCompileLimit.Error()+": "):
		msg := strings.TrimPrefix(r.GetError(), wasm.ErrCompileLimit.Error()+": ")
		return &ptcruntime.Outcome{Err: &fault.Error{Kind: fault.KindSyntax, Message: msg, Cause: wasm.ErrCompileLimit}}
	case r.GetError() != "":
		return &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "the worker could not compile the module: %s", r.GetError())}
	}
	w.sent(m.hash)
	if m.python && ctx.Err() != nil {
		// The worker holds the interpreter now, and serves on.
		es.clean = true
		return compileEnded(ctx, es, "the execution ran out of time while its worker compiled the Python interpreter (once per worker); run it again")
	}
	return nil
}

// compileEnded is the outcome of an execution whose ctx ended before a
// compile let it start: TIMEOUT with timedOut at its deadline, CANCELLED
// when its caller cancelled it.
func compileEnded(ctx context.Context, es *execState, timedOut string) *ptcruntime.Outcome {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &ptcruntime.Outcome{Err: fault.Breach(fault.KindTimeout, es.job.Limits.Timeout.Nanoseconds(), time.Since(es.started).Nanoseconds(), "%s", timedOut)}
	}
	return &ptcruntime.Outcome{Err: fault.Wrap(fault.KindCancelled, ctx.Err(), "the execution was cancelled by the caller")}
}

// wasmEngine returns the worker's WebAssembly engine, made on first use.
func (c *child) wasmEngine() (*wasm.Engine, error) {
	c.wasmOnce.Do(func() {
		cfg := c.wasmCfg
		cfg.NoLoopChecks = true
		c.wasm, c.wasmErr = wasm.New(cfg)
	})
	return c.wasm, c.wasmErr
}

// runWASM runs a WebAssembly job with the worker's engine on the calling
// (lane) goroutine, its CPU time read from the thread's clock by the
// watchdog (which reports a breach; the supervisor then stops the worker,
// as the guest cannot be interrupted). unknown means the worker does not
// hold the module and the job did not carry it.
func (e *executor) runWASM(ctx context.Context, eng *wasm.Engine, job *ptcruntime.Job, baseLive int64, shared bool,
	onBreach func(*fault.Error, time.Duration, int64), spun func() time.Duration) (out *ptcruntime.Outcome, unknown bool) {
	if e.threadSetup != nil {
		e.threadSetup()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Memory is the engine's limit (its allocator refuses memory.grow):
	// the heap watchdog would count the linear memory with the worker's
	// own heap.
	wd := newWatchdog(job.Limits.CPUTime, 0, baseLive, shared, cancel)
	wd.leaveOut(spun)
	wd.onBreach = func(fe *fault.Error, cpu time.Duration, peak int64) {
		onBreach(wasmBreach(fe), cpu, peak)
	}
	wd.start()
	inner := *job
	inner.Limits.CPUTime = 0
	if len(job.Module) > 0 {
		out = eng.Run(ctx, &inner)
	} else {
		var err error
		out, err = eng.RunHash(ctx, job.ModuleSHA256, &inner)
		if err != nil {
			unknown = errors.Is(err, wasm.ErrUnknownModule)
			out = &ptcruntime.Outcome{Err: fault.Wrap(fault.KindInternal, err, "the worker could not run the module")}
		}
	}
	cpu, _, fe := wd.stop()
	if fe == nil {
		var b *breach
		if errors.As(context.Cause(ctx), &b) {
			fe = b.fe
		}
	}
	if fe != nil {
		out.Result, out.Err = nil, wasmBreach(fe)
	}
	out.CPUTime = cpu
	return out, unknown
}

// wasmBreach words a CPU breach as the WebAssembly engine does in-process.
func wasmBreach(fe *fault.Error) *fault.Error {
	if fe.Kind != fault.KindCPULimit {
		return fe
	}
	lim := time.Duration(fe.Limit)
	return fault.Breach(fault.KindCPULimit, fe.Limit, fe.Observed,
		"the module computed for more than %s of CPU time; do less work per execution or raise the CPU limit", lim)
}

// watchCPU enforces a guest's CPU limit from the supervisor, on the CPU
// clock of the worker thread that runs it (its lane's thread, which the
// worker reported at start): it reads the clock when the limit could first
// have been used (one thread uses at most wall time), then again when the
// rest could have been, and kills the worker with a CPU_LIMIT breach once
// the guest used its limit. The returned function disarms it and reports
// whether it had killed the worker.
func (w *proc) watchCPU(es *execState) (stop func() (killed bool)) {
	lim := es.job.Limits.CPUTime
	threads := w.ready.GetLaneThreads()
	if lim <= 0 || es.lane == 0 || es.lane > uint64(len(threads)) {
		return func() bool { return false }
	}
	clock, err := w.laneClock(es.lane)
	var start time.Duration
	if err == nil {
		start, err = readThreadCPU(clock)
	}
	if err != nil {
		// The worker's own watchdog is then the only one.
		return func() bool { return false }
	}
	var mu sync.Mutex
	var t *time.Timer
	stopped, killed := false, false
	check := func() {
		used, err := readThreadCPU(clock)
		mu.Lock()
		defer mu.Unlock()
		if stopped || err != nil {
			return
		}
		if used -= start; used < lim {
			t.Reset(max(lim-used, time.Millisecond))
			return
		}
		w.mu.Lock()
		if es.breach == nil {
			es.breach = wasmBreach(fault.Breach(fault.KindCPULimit, lim.Nanoseconds(), used.Nanoseconds(), ""))
			es.breachCPU = used
		}
		w.mu.Unlock()
		killed = true
		w.stop(stopLimit, "a WebAssembly guest broke its "+fault.KindCPULimit.String())
	}
	mu.Lock()
	t = time.AfterFunc(lim, check)
	mu.Unlock()
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
		return killed
	}
}

// laneClock returns the open /proc schedstat file of lane's thread (one
// of the worker's lane threads), opened once for the worker's life: an
// execution's CPU watch reads it with one pread instead of opening it
// again (os.ReadFile is six system calls on the execution's path).
func (w *proc) laneClock(lane uint64) (*os.File, error) {
	threads := w.ready.GetLaneThreads()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.execs == nil {
		return nil, os.ErrClosed
	}
	if w.clocks == nil {
		w.clocks = make([]*os.File, len(threads))
	}
	if f := w.clocks[lane-1]; f != nil {
		return f, nil
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/schedstat", w.pid, threads[lane-1]))
	if err != nil {
		return nil, err
	}
	w.clocks[lane-1] = f
	return f, nil
}

// closeClocks closes the lanes' schedstat files (the worker has ended);
// a watch that reads one afterwards gets an error and does nothing.
func (w *proc) closeClocks() {
	w.mu.Lock()
	clocks := w.clocks
	w.clocks = nil
	w.mu.Unlock()
	for _, f := range clocks {
		if f != nil {
			_ = f.Close()
		}
	}
}

// readThreadCPU reads a thread's CPU time from its open /proc schedstat
// file (the first field, in nanoseconds).
func readThreadCPU(f *os.File) (time.Duration, error) {
	var buf [128]byte
	n, err := f.ReadAt(buf[:], 0)
	if n == 0 && err != nil {
		return 0, err
	}
	b := buf[:n]
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	ns, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || ns < 0 {
		return 0, fmt.Errorf("worker: unreadable schedstat %q", b)
	}
	return time.Duration(ns), nil
}

// boundsPB is the Init frame's form of the supervisor's module bounds.
func boundsPB(b wasm.Bounds) *wp.ModuleBounds {
	return &wp.ModuleBounds{
		MaxTypes: int64(b.MaxTypes), MaxParams: int64(b.MaxParams), MaxFunctions: int64(b.MaxFunctions),
		MaxImports: int64(b.MaxImports), MaxExports: int64(b.MaxExports), MaxGlobals: int64(b.MaxGlobals),
		MaxFunctionLocals: int64(b.MaxFunctionLocals), MaxLocals: int64(b.MaxLocals), MaxFunctionBytes: int64(b.MaxFunctionBytes),
		MaxNesting: int64(b.MaxNesting), MaxBranchTargets: int64(b.MaxBranchTargets), MaxBranchTableTargets: int64(b.MaxBranchTableTargets),
		MaxDataSegments: int64(b.MaxDataSegments), MaxDataBytes: int64(b.MaxDataBytes), MaxElementSegments: int64(b.MaxElementSegments),
		MaxElements: int64(b.MaxElements), MaxNames: int64(b.MaxNames), CompileTimeoutNs: int64(b.CompileTimeout),
		MaxConcurrentCompiles: int64(b.MaxConcurrentCompiles), CompileMemoryBytes: b.CompileMemoryBytes,
	}
}

// boundsOf reads the module bounds of an Init frame; values that do not
// fit an int are clamped (the engine treats zero and less as its default).
func boundsOf(m *wp.ModuleBounds) wasm.Bounds {
	n := func(v int64) int { return int(min(v, int64(math.MaxInt32))) }
	return wasm.Bounds{
		MaxTypes: n(m.GetMaxTypes()), MaxParams: n(m.GetMaxParams()), MaxFunctions: n(m.GetMaxFunctions()),
		MaxImports: n(m.GetMaxImports()), MaxExports: n(m.GetMaxExports()), MaxGlobals: n(m.GetMaxGlobals()),
		MaxFunctionLocals: n(m.GetMaxFunctionLocals()), MaxLocals: n(m.GetMaxLocals()), MaxFunctionBytes: n(m.GetMaxFunctionBytes()),
		MaxNesting: n(m.GetMaxNesting()), MaxBranchTargets: n(m.GetMaxBranchTargets()), MaxBranchTableTargets: n(m.GetMaxBranchTableTargets()),
		MaxDataSegments: n(m.GetMaxDataSegments()), MaxDataBytes: n(m.GetMaxDataBytes()), MaxElementSegments: n(m.GetMaxElementSegments()),
		MaxElements: n(m.GetMaxElements()), MaxNames: n(m.GetMaxNames()), CompileTimeout: time.Duration(m.GetCompileTimeoutNs()),
		MaxConcurrentCompiles: n(m.GetMaxConcurrentCompiles()), CompileMemoryBytes: m.GetCompileMemoryBytes(),
	}
}
