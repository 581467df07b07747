package python

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

//go:embed prelude.py
var prelude string

// flags put the interpreter in isolated mode (no environment, no user
// site, no script directory on sys.path) without the site module (it
// costs start-up time and finds nothing in the module's file system).
var flags = []string{"python", "-I", "-S"}

// boot is the program an execution's interpreter starts with: it reads
// the prelude's compiled code from stdin — a line with its length, then
// the code as marshal wrote it — and runs it, handing on what it read
// past the code. Compiling the prelude from source costs each execution
// about 0.1 s of CPU; loading its code object costs next to nothing.
const boot = `import posix, marshal
b = b""
while b"\n" not in b:
    c = posix.read(0, 1 << 16)
    if not c:
        posix._exit(0)
    b += c
h, _, b = b.partition(b"\n")
n = int(h)
while len(b) < n:
    c = posix.read(0, 1 << 16)
    if not c:
        posix._exit(0)
    b += c
exec(marshal.loads(b[:n]), {"__name__": "__main__", "__builtins__": __builtins__, "_leftover": b[n:]})
`

// compileProgram is the program that compiles the prelude (given as its
// argument) and writes its code to stdout, once per Engine.
const compileProgram = `import marshal, posix, sys
d = marshal.dumps(compile(sys.argv[1], "<prelude>", "exec", dont_inherit=True))
while d:
    d = d[posix.write(1, d):]
`

// compileTimeout bounds the interpreter's compilation: a 26 MB module
// takes about 10 s on a loaded 2-core host (a few seconds from a cache
// directory).
const compileTimeout = 10 * time.Minute

// Config configures an Engine.
type Config struct {
	// Module is the interpreter module's bytes, already verified by the
	// caller against its pinned SHA-256.
	Module []byte
	// CacheDir keeps wazero's compiled code in a directory, so that a
	// restarted process loads the interpreter instead of compiling it.
	CacheDir string
	// MaxMemory is the most memory any execution may use (0: the
	// WebAssembly engine's default).
	MaxMemory int64
	// NoLoopChecks compiles without the checks that let a cancelled
	// context stop a guest that never calls the host (see
	// wasm.Config.NoLoopChecks): only for a process the supervisor kills
	// at the deadline.
	NoLoopChecks bool
	// Warm is how many interpreters are kept started ahead of requests,
	// their prelude loaded and waiting for a job (0: none; every execution
	// starts its own).
	Warm int
}

// Engine runs Python jobs. It is safe for concurrent use; Close releases
// it.
type Engine struct {
	w    *wasm.Engine
	hash string
	// code is the prelude's code object, marshalled, with its length line.
	code []byte
	// pool holds interpreters started ahead of requests (nil: none).
	pool *pool
}

var _ runtime.Engine = (*Engine)(nil)

// New compiles the interpreter (or loads it from the cache directory) and
// returns an Engine that runs it.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if len(cfg.Module) == 0 {
		return nil, errors.New("python: no interpreter module")
	}
	mod, err := stripDebug(cfg.Module)
	if err != nil {
		return nil, fmt.Errorf("python: the interpreter module: %w", err)
	}
	w, err := wasm.New(wasm.Config{
		MaxModules:     1,
		MaxModuleBytes: len(mod),
		CacheDir:       cfg.CacheDir,
		MaxMemory:      cfg.MaxMemory,
		NoLoopChecks:   cfg.NoLoopChecks,
		Bounds:         wasm.Bounds{CompileTimeout: compileTimeout},
	})
	if err != nil {
		return nil, fmt.Errorf("python: %w", err)
	}
	hash, err := w.Compile(ctx, mod)
	if err != nil {
		_ = w.Close(context.Background())
		return nil, fmt.Errorf("python: compile the interpreter: %w", err)
	}
	e := &Engine{w: w, hash: hash}
	if e.code, err = e.compilePrelude(ctx); err != nil {
		_ = w.Close(context.Background())
		return nil, err
	}
	if cfg.Warm > 0 {
		e.pool = newPool(e, cfg.Warm)
	}
	return e, nil
}

// compilePrelude runs the interpreter once to compile the prelude.
func (e *Engine) compilePrelude(ctx context.Context) ([]byte, error) {
	var code bytes.Buffer
	job := &runtime.Job{Limits: limits.Limits{Timeout: compileTimeout}}
	out, err := e.w.RunStreams(ctx, e.hash, job, append(slices.Clone(flags), "-c", compileProgram, prelude),
		func(context.Context, wasm.Meter) (io.Reader, io.Writer) { return bytes.NewReader(nil), &code }, nil)
	if err == nil && out.Err != nil {
		err = out.Err
	}
	if err == nil && code.Len() == 0 {
		err = errors.New("it wrote nothing")
	}
	if err != nil {
		return nil, fmt.Errorf("python: compile the prelude: %w", err)
	}
	return append([]byte(strconv.Itoa(code.Len())+"\n"), code.Bytes()...), nil
}

// Close stops the interpreters started ahead of requests and releases
// the compiled interpreter.
func (e *Engine) Close(ctx context.Context) error {
	if e.pool != nil {
		e.pool.close()
	}
	return e.w.Close(ctx)
}

// Run implements runtime.Engine: the job runs on an interpreter started
// ahead of it when the pool has one its limits fit, else on one started
// for it.
func (e *Engine) Run(ctx context.Context, job *runtime.Job) *runtime.Outcome {
	caller := job.Tools
	if caller == nil {
		caller = bridge.New(bridge.Config{ExecutionID: job.ExecutionID})
	}
	if w := e.pool.take(job.Limits.MemoryBytes); w != nil {
		if out, ok := e.runWarm(ctx, job, caller, w); ok {
			return out
		}
	}
	return e.runFresh(ctx, job, caller)
}

// runFresh runs job on an interpreter started for it.
func (e *Engine) runFresh(ctx context.Context, job *runtime.Job, caller bridge.Caller) *runtime.Outcome {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	s := newSession(e.code)
	s.watch = cpuWatchOf(ctx)
	s.attach(job, caller, stopHook(ctx, s, stop))
	out, err := e.w.RunStreams(ctx, e.hash, job, e.args(), s.open, s.configure)
	// The calls still running end with the execution's context, which
	// RunStreams has ended.
	s.spawnDeferred()
	s.calls.Wait()
	if err != nil {
		return &runtime.Outcome{Err: fault.Wrap(fault.KindInternal, err, "the Python interpreter is unavailable")}
	}
	s.finish(out)
	return out
}

// runWarm runs job on w, which the pool's take returned, and tells the
// pool when it has ended. It reports false, having run nothing of the
// job, when w's interpreter ended before it read the job (it crashed
// while it waited): the caller runs the job on a fresh one.
func (e *Engine) runWarm(ctx context.Context, job *runtime.Job, caller bridge.Caller, w *warm) (*runtime.Outcome, bool) {
	defer e.pool.done()
	s := w.s
	s.watch = cpuWatchOf(ctx)
	out := w.inst.Run(ctx, job, func() { s.attach(job, caller, stopHook(ctx, s, w.inst.Stop)) })
	s.spawnDeferred()
	s.calls.Wait()
	if !s.begun && ctx.Err() == nil && (out.Err == nil || out.Err.Kind == fault.KindScript) {
		return nil, false
	}
	s.finish(out)
	return out, true
}

// args are the interpreter's arguments: the boot program.
func (e *Engine) args() []string { return append(slices.Clone(flags), "-c", boot) }
