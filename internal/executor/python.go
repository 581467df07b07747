package executor

import (
	"context"
	"errors"
	"sync"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/pyinterp"
	"github.com/ptcrun/ptc/internal/python"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// PythonConfig configures the Python engine. The zero value finds the
// pinned interpreter in the user's cache or in node_modules.
type PythonConfig struct {
	// Interpreter is the path of the interpreter module (python.wasm);
	// empty looks in the user's cache (`ptc python install`) and in
	// node_modules.
	Interpreter string
	// SHA256 is the interpreter's expected hex SHA-256; empty means the
	// pinned pyinterp.SHA256. A file with another digest is refused.
	SHA256 string
	// CacheDir keeps the interpreter's compiled code between processes;
	// empty means a directory in the user's cache, when there is one.
	CacheDir string
	// MaxMemory is the most memory one execution may use (0: the policy's
	// memory ceiling).
	MaxMemory int64
	// InProcess runs Python in this process even while the executor runs
	// the other languages in worker processes (Mode ModeWorker): under the
	// WebAssembly engine's limits but outside the worker sandbox (ptcd's
	// python.in_supervisor). Unset, Python runs in the workers when they
	// are worker processes, and in this process otherwise.
	InProcess bool
	// Warm is how many interpreters are kept started ahead of Python
	// requests once the first one has loaded the interpreter (0: none).
	Warm int
}

// lazyPython is the Python engine: the interpreter is loaded, verified
// and compiled on the first Python request (about 10 s cold, a few from a
// cache directory), so executors that run no Python never pay for it.
// With worker processes (pool set) this process only loads and verifies
// the interpreter, and hands it to the workers, which compile it.
type lazyPython struct{ p *pythonState }

type pythonState struct {
	cfg  PythonConfig
	once sync.Once
	eng  *python.Engine
	err  error
	// pool runs Python in worker processes (nil: in this process);
	// interp is the interpreter it is given, loaded once (modOnce).
	pool    *worker.Pool
	modOnce sync.Once
	interp  *worker.PythonInterpreter
	modErr  error
}

// interpreter loads and verifies the interpreter for the workers, once;
// the error of a failed load is kept.
func (l lazyPython) interpreter() (*worker.PythonInterpreter, error) {
	l.p.modOnce.Do(func() {
		mod, err := pyinterp.Load(l.p.cfg.Interpreter, l.p.cfg.SHA256)
		if err != nil {
			l.p.modErr = err
			return
		}
		l.p.interp, l.p.modErr = worker.NewPythonInterpreter(mod, l.p.cfg.Warm)
	})
	return l.p.interp, l.p.modErr
}

// engine loads the interpreter once; the error of a failed load is kept
// (a missing interpreter stays missing until the process restarts). The
// compilation is bounded by its own timeout, not by the first request's
// context, whose end must not fail every later request.
func (l lazyPython) engine() (*python.Engine, error) {
	l.p.once.Do(func() {
		mod, err := pyinterp.Load(l.p.cfg.Interpreter, l.p.cfg.SHA256)
		if err != nil {
			l.p.err = err
			return
		}
		dir := l.p.cfg.CacheDir
		if dir == "" {
			dir = pyinterp.CompileCacheDir()
		}
		l.p.eng, l.p.err = python.New(context.Background(), python.Config{Module: mod, CacheDir: dir, MaxMemory: l.p.cfg.MaxMemory, Warm: l.p.cfg.Warm})
	})
	if l.p.eng == nil && l.p.err == nil {
		// Close ran first.
		return nil, errors.New("the executor is closed")
	}
	return l.p.eng, l.p.err
}

// Run implements runtime.Engine.
func (l lazyPython) Run(ctx context.Context, job *runtime.Job) *runtime.Outcome {
	if l.p.pool != nil {
		in, err := l.interpreter()
		if err != nil {
			return &runtime.Outcome{Err: fault.Wrap(fault.KindInternal, err, "the Python engine is unavailable: "+err.Error())}
		}
		return l.p.pool.RunPython(ctx, job, in)
	}
	eng, err := l.engine()
	if err != nil {
		return &runtime.Outcome{Err: fault.Wrap(fault.KindInternal, err, "the Python engine is unavailable: "+err.Error())}
	}
	return eng.Run(ctx, job)
}

// preparePython makes sure the interpreter is there before a Python
// request is accepted: a missing or altered one refuses the request with
// FAILED_PRECONDITION, naming the command that installs it.
func (e *Executor) preparePython() *fault.Error {
	l, ok := e.engines[core.LanguagePython].(lazyPython)
	if !ok {
		return nil
	}
	if l.p.pool != nil {
		if _, err := l.interpreter(); err != nil {
			return fault.Reject(fault.CodeFailedPrecondition, "%v", err)
		}
		return nil
	}
	if _, err := l.engine(); err != nil {
		return fault.Reject(fault.CodeFailedPrecondition, "%v", err)
	}
	return nil
}

// close releases the engine, if one was made.
func (p *pythonState) close() error {
	p.once.Do(func() {}) // no engine is made after Close
	if p.eng != nil {
		return p.eng.Close(context.Background())
	}
	return nil
}
