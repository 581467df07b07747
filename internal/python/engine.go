package python

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/runtime"
	"github.com/ptcrun/ptc/runtime/wasm"
)

//go:embed prelude.py
var prelude string

// args are the interpreter's arguments: isolated mode (no environment, no
// user site, no script directory on sys.path), no site module (it costs
// start-up time and finds nothing in the module's file system), and the
// prelude as the program.
var args = []string{"python", "-I", "-S", "-c", prelude}

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
}

// Engine runs Python jobs. It is safe for concurrent use; Close releases
// it.
type Engine struct {
	w    *wasm.Engine
	hash string
}

var _ runtime.Engine = (*Engine)(nil)

// New compiles the interpreter (or loads it from the cache directory) and
// returns an Engine that runs it.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if len(cfg.Module) == 0 {
		return nil, errors.New("python: no interpreter module")
	}
	w, err := wasm.New(wasm.Config{
		MaxModules:     1,
		MaxModuleBytes: len(cfg.Module),
		CacheDir:       cfg.CacheDir,
		MaxMemory:      cfg.MaxMemory,
		NoLoopChecks:   cfg.NoLoopChecks,
		Bounds:         wasm.Bounds{CompileTimeout: compileTimeout},
	})
	if err != nil {
		return nil, fmt.Errorf("python: %w", err)
	}
	hash, err := w.Compile(ctx, cfg.Module)
	if err != nil {
		_ = w.Close(context.Background())
		return nil, fmt.Errorf("python: compile the interpreter: %w", err)
	}
	return &Engine{w: w, hash: hash}, nil
}

// Close releases the compiled interpreter.
func (e *Engine) Close(ctx context.Context) error { return e.w.Close(ctx) }

// Run implements runtime.Engine.
func (e *Engine) Run(ctx context.Context, job *runtime.Job) *runtime.Outcome {
	caller := job.Tools
	if caller == nil {
		caller = bridge.New(bridge.Config{ExecutionID: job.ExecutionID})
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	s := newSession(job, caller, stop)
	out, err := e.w.RunStreams(ctx, e.hash, job, args, s.open, s.configure)
	// The calls still running end with the execution's context, which
	// RunStreams has ended.
	s.calls.Wait()
	if err != nil {
		return &runtime.Outcome{Err: fault.Wrap(fault.KindInternal, err, "the Python interpreter is unavailable")}
	}
	s.finish(out)
	return out
}
