package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/python"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// Python in worker processes. The interpreter (CPython for WASI) is a
// WebAssembly module the supervisor has verified (its path and SHA-256)
// and stripped of its debug sections; it travels like a WebAssembly job's
// module: by hash in the Execute frame, and, to a worker that may not
// hold it, in a Compile frame marked python, which the worker answers
// once it has made its Python engine from it. A worker makes that engine
// at most once (compiling the 13 MB module takes seconds, which are
// neither the execution's time nor its CPU) and keeps it for every later
// Python execution, with the interpreters its pool starts ahead
// (PythonInterpreter.Warm). The interpreter is compiled without loop
// checks, as every guest in a worker: the worker watches the guest's CPU
// clock (python.WithCPUWatch) and reports a breach, the supervisor kills
// the worker at the deadline and on a breach, and memory is the engine's
// limit with RLIMIT_DATA behind it — all as for WebAssembly (wasm.go).

// pythonCompileTimeout bounds the wait for a worker to make its Python
// engine: the compile takes about 3 s on an idle 2-core host, 10 s under
// load. A variable for its test.
var pythonCompileTimeout = 5 * time.Minute

// pythonCompiles is how many workers of a pool may compile the Python
// interpreter at once. A compile takes seconds of CPU that no execution
// is charged for, and every worker that replaces one killed (a Python
// script past its deadline, any script past its CPU limit) compiles again
// on its first Python job: unbounded, a burst of cheap requests that get
// workers killed would have every worker compiling at once, and the
// server's cores with them. One at a time caps what such requests cost
// the server at one core, and costs an honest burst on fresh workers
// nothing on a small host, where parallel compiles share its cores.
const pythonCompiles = 1

// PythonInterpreter is the interpreter a Pool runs Python jobs with.
type PythonInterpreter struct {
	// Module is the interpreter module as python.StripDebug returns it,
	// verified against its pinned SHA-256 by the caller.
	Module []byte
	// SHA256 is Module's hex SHA-256.
	SHA256 string
	// Warm is how many interpreters each worker that has run Python keeps
	// started ahead of its next Python executions (0: none).
	Warm int
}

// NewPythonInterpreter returns the interpreter for module (verified by
// the caller): stripped and hashed once.
func NewPythonInterpreter(module []byte, warm int) (*PythonInterpreter, error) {
	bin, err := python.StripDebug(module)
	if err != nil {
		return nil, fmt.Errorf("python: the interpreter module: %w", err)
	}
	sum := sha256.Sum256(bin)
	return &PythonInterpreter{Module: bin, SHA256: hex.EncodeToString(sum[:]), Warm: warm}, nil
}

// RunPython runs a Python job on a worker process (ModeWorker only) with
// interpreter in. It never panics; every failure is a classified error in
// the Outcome.
func (p *Pool) RunPython(ctx context.Context, job *ptcruntime.Job, in *PythonInterpreter) *ptcruntime.Outcome {
	if p.cfg.Mode != ModeWorker {
		return &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "the in-process pool does not run Python; run it on the Python engine")}
	}
	if in == nil || len(in.Module) == 0 {
		return &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "no Python interpreter was given")}
	}
	if job.Tools == nil {
		j := *job
		j.Tools = bridge.New(bridge.Config{ExecutionID: job.ExecutionID})
		job = &j
	}
	m := wasmJob{hash: in.SHA256, bin: in.Module, python: true, warm: in.Warm}
	out := p.runWorker(ctx, job, &m)
	if m.unknown && !m.resent {
		m.resent = true
		out = p.runWorker(ctx, job, &m)
	}
	if m.unknown {
		return &ptcruntime.Outcome{Err: fault.Wrap(fault.KindInternal, wasm.ErrUnknownModule, "the worker did not keep the Python interpreter it was sent")}
	}
	return out
}

// pyEngine is a worker's Python engine, made by the first Compile frame
// that carries the interpreter.
type pyEngine struct {
	mu   sync.Mutex
	eng  *python.Engine
	hash string
}

// make returns the hash of the interpreter the engine runs, making the
// engine from module unless it runs that module already. A different
// interpreter replaces the engine (the supervisor sends one only).
func (p *pyEngine) make(module []byte, maxMemory int64, warm int) (string, error) {
	sum := sha256.Sum256(module)
	hash := hex.EncodeToString(sum[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eng != nil && p.hash == hash {
		return hash, nil
	}
	if p.eng != nil {
		_ = p.eng.Close(context.Background())
		p.eng, p.hash = nil, ""
	}
	eng, err := python.New(context.Background(), python.Config{Module: module, MaxMemory: maxMemory, NoLoopChecks: true, Warm: warm})
	if err != nil {
		return "", err
	}
	p.eng, p.hash = eng, hash
	return hash, nil
}

// get returns the engine when it runs interpreter hash, nil otherwise.
func (p *pyEngine) get(hash string) *python.Engine {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eng == nil || p.hash != hash {
		return nil
	}
	return p.eng
}

// compilePython makes the worker's Python engine from a Compile frame
// that carries the interpreter, and answers with its hash.
func (l *lane) compilePython(m *wp.Compile) {
	r := &wp.Compiled{Slot: m.GetSlot()}
	var err error
	r.ModuleSha256, err = l.c.python.make(m.GetModule(), l.c.wasmCfg.MaxMemory, int(m.GetPythonWarm()))
	if err != nil {
		r.Error = err.Error()
	}
	// Compiling left hundreds of MiB of garbage in the heap: returned to
	// the system now, off any execution's path. The engine (and its
	// interpreters started ahead) grew the data segment: measured again
	// for the next execution's RLIMIT_DATA.
	debug.FreeOSMemory()
	l.c.vmData.Store(l.c.status.vmData())
	_ = sendFrame(l.c.conn, m.GetSlot(), &wp.WorkerFrame{Msg: &wp.WorkerFrame_Compiled{Compiled: r}}, false)
}

// runPython runs a Python job with the worker's engine on the calling
// (lane) goroutine. The engine keeps the job's limits (its own watch
// stops a guest that calls the host); the worker's CPU watch, on the
// guest's own clock (an interpreter started ahead runs on a thread of its
// own), reports a breach through onBreach, and the supervisor then stops
// the worker, as for WebAssembly. unknown means the worker has no engine
// for the job's interpreter. The guest's goroutine waits for tool answers
// itself (the lane's call proxy is a bridge.Awaiter); spun, if set,
// returns the CPU time waiters spent spinning for them (internal/ipc),
// which is not the script's and is left out of its CPU time.
func (e *executor) runPython(ctx context.Context, eng *python.Engine, job *ptcruntime.Job,
	onBreach func(*fault.Error, time.Duration, int64), spun func() time.Duration) (out *ptcruntime.Outcome, unknown bool) {
	if eng == nil {
		return &ptcruntime.Outcome{Err: fault.Wrap(fault.KindInternal, wasm.ErrUnknownModule, "the worker does not hold the Python interpreter")}, true
	}
	if e.threadSetup != nil {
		e.threadSetup()
	}
	waited := func() time.Duration { return 0 }
	if spun != nil {
		spun0 := spun()
		waited = func() time.Duration { return spun() - spun0 }
	}
	w := &pyCPUWatch{limit: job.Limits.CPUTime, onBreach: onBreach, waited: waited}
	defer w.stop()
	s := &pyStopWatch{onBreach: onBreach}
	defer s.stop()
	ctx = python.WithStopWatch(python.WithCPUWatch(ctx, w.arm), s.arm)
	if job.Idle != nil {
		inner := *job
		inner.Idle = func(inflight int, cpu time.Duration) { job.Idle(inflight, max(cpu-waited(), 0)) }
		job = &inner
	}
	out = eng.Run(ctx, job)
	out.CPUTime = max(out.CPUTime-waited(), 0)
	return out, false
}

// guestStopGrace is how long a Python guest the engine stopped for a
// breach may take to end (one blocked in a read of its stdin ends at
// once) before the worker reports the breach, which has the supervisor
// kill the worker: a guest compiled without loop checks that computes on
// is stopped by nothing else.
const guestStopGrace = 2 * time.Second

// guestWatch is the state both watches of a Python guest keep: the timer
// armed once, and whether the watch has ended (fired or stopped).
type guestWatch struct {
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

// stop disarms the watch: the guest has ended.
func (w *guestWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.t != nil {
		w.t.Stop()
	}
}

// pyStopWatch reports a Python guest's breach when the guest has not
// ended guestStopGrace after the engine stopped it.
type pyStopWatch struct {
	guestWatch
	onBreach func(*fault.Error, time.Duration, int64)
}

// arm starts the grace (python.WithStopWatch).
func (w *pyStopWatch) arm(fe *fault.Error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.t != nil || w.onBreach == nil {
		return
	}
	w.t = time.AfterFunc(guestStopGrace, func() {
		w.mu.Lock()
		stopped := w.stopped
		w.stopped = true
		w.mu.Unlock()
		if !stopped {
			w.onBreach(fe, 0, 0)
		}
	})
}

// pyCPUWatch reports a Python guest's CPU breach: it reads the guest's
// clock when the limit could first have been used (one thread uses at
// most wall time), then again when the rest could have been.
type pyCPUWatch struct {
	guestWatch
	limit    time.Duration
	onBreach func(*fault.Error, time.Duration, int64)
	// waited is the CPU time the guest's thread spent spinning for tool
	// answers since the job began: not the script's.
	waited func() time.Duration
}

// arm starts the watch on the guest's clock (python.WithCPUWatch).
func (w *pyCPUWatch) arm(m wasm.Meter) {
	if w.limit <= 0 || w.onBreach == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.t != nil {
		return
	}
	var check func()
	check = func() {
		used := m.CPU() - w.waited()
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		if used < w.limit {
			w.t.Reset(max(w.limit-used, time.Millisecond))
			w.mu.Unlock()
			return
		}
		w.stopped = true
		w.mu.Unlock()
		w.onBreach(wasmBreach(fault.Breach(fault.KindCPULimit, w.limit.Nanoseconds(), used.Nanoseconds(), "")), used, m.Peak())
	}
	w.t = time.AfterFunc(w.limit, check)
}

// errNoPython is the refusal of a Python Execute frame without the
// interpreter's hash.
var errNoPython = errors.New("a Python execution needs its interpreter's SHA-256")

// pythonCompileSlot waits for one of the pool's slots for compiling the
// Python interpreter (pythonCompiles) and returns its release; while the
// other slots are taken the execution waits, its worker reserved for it,
// until one frees or ctx ends. An execution whose ctx ends first gets its
// outcome instead (TIMEOUT or CANCELLED), and its worker, which has done
// nothing, serves on.
func (p *Pool) pythonCompileSlot(ctx context.Context, es *execState) (release func(), out *ptcruntime.Outcome) {
	select {
	case p.pyCompiles <- struct{}{}:
	default:
		select {
		case p.pyCompiles <- struct{}{}:
		case <-ctx.Done():
			es.clean = true
			return nil, compileEnded(ctx, es, "the execution ran out of time waiting for a worker to compile the Python interpreter (one worker compiles it at a time, once per worker); run it again")
		}
	}
	return func() { <-p.pyCompiles }, nil
}
