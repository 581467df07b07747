// Package executor prepares and runs executions: the one place where a
// core.Request is validated (once) and its limits clamped (once, under the
// operator's policy narrowed by the caller's tenant), where its tools are
// selected and compiled, and where it runs on an engine and becomes a
// core.Result.
//
// The root package's Runner wraps an Executor; internal/server and cmd/ptcd
// use one directly (Prepare, then admission, then Run). It is the layer
// between the public API and the engines: it imports runtime/..., bridge
// and tools, never gRPC or the root package.
package executor

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/lru"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
	"github.com/ptcrun/ptc/internal/runtime/ts"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/tools"
)

// Request size bounds (defaults of Config.MaxSourceBytes and MaxInputBytes).
const (
	DefaultMaxSourceBytes = 1 << 20
	DefaultMaxInputBytes  = 8 << 20
	// MaxExecutionIDLength bounds a caller-chosen execution id.
	MaxExecutionIDLength = 128
	// wasmModuleFactor: a WebAssembly module may be this many times
	// MaxSourceBytes.
	wasmModuleFactor = 16
	// inProcessWarm is how many JavaScript runtimes the in-process engine
	// keeps made ahead of the executions that will use them (each runs
	// one execution): two, so that a burst of two does not wait.
	inProcessWarm = 2
)

// Config configures an Executor. The zero value runs every language
// in-process with the default policy and an empty registry.
type Config struct {
	// Registry holds the server tools; nil means an empty one.
	Registry *tools.Registry
	// Policy is the operator's defaults and ceilings; zero means
	// limits.DefaultPolicy().
	Policy limits.Policy
	// Languages enables only these languages; empty enables all.
	Languages []core.Language
	// MaxSourceBytes bounds a script's source (a WebAssembly module may be
	// 16 times larger); MaxInputBytes bounds its input JSON.
	MaxSourceBytes, MaxInputBytes int
	// Workers, when set, runs JavaScript and TypeScript in a pool of worker
	// processes (or in-process with the pool's guards, Mode ModeInProcess).
	Workers *worker.Config
	// WASM configures the WebAssembly engine, created on the first WASM
	// request — in-process only: with worker processes (Workers in
	// ModeWorker) it configures the workers' engines and the bounds the
	// pool checks modules with, and no engine is made in this process.
	WASM wasm.Config
	// Python configures the Python engine, created on the first Python
	// request.
	Python PythonConfig
	// Durable seals paused executions into continuations and opens them;
	// nil refuses resumable executions.
	Durable *durable.Manager
	// Approve, when set, reports the server tools whose every call needs
	// approval (the operator's rules), besides those whose definition says
	// so.
	Approve func(tool string) bool
	// Outcomes encodes the outcomes of resumes to keep them for retries
	// (wire.Outcomes). Nil keeps none: a retry still waits for a resume
	// running here, and is CONTINUATION_USED once it ended.
	Outcomes OutcomeCodec
	// Parked bounds the paused executions kept waiting in memory, to be
	// resumed without a re-run (see parked.go); zero keeps the defaults.
	Parked ParkedConfig
	// OnPark, when set, is told each paused execution kept parked in
	// memory, by pause id, and until when it may stay (Parked.MaxAge): a
	// replica records there that a Resume of it is best run here
	// (resume forwarding). It runs before the pause is answered.
	OnPark func(ctx context.Context, pauseID string, until time.Time)
	// Tracing makes a span per execution and per tool call; the zero value
	// makes none.
	Tracing telemetry.Tracing
}

// Executor validates, prepares and runs executions. It is safe for
// concurrent use.
type Executor struct {
	reg       *tools.Registry
	policy    limits.Policy
	engines   map[core.Language]runtime.Engine
	maxSource int
	maxInput  int
	schemas   *lru.Cache[[32]byte, *tools.Schema]
	pool      *worker.Pool
	// sent remembers which tenant sent which WebAssembly module (key
	// sentKey): a module is run by digest alone only for a tenant that
	// sent its bytes, so that a tenant can neither run another's module
	// nor learn that it was sent.
	sent *lru.Cache[string, struct{}]

	durable *durable.Manager
	// outputs remembers the output schemas that paused executions' calls
	// wait for, by pause id (pendingcheck.go).
	outputs  *lru.Cache[string, pausedOutputs]
	outcomes OutcomeCodec
	approve  func(string) bool
	parked   *parkedSet
	onPark   func(context.Context, string, time.Time)

	wasmCfg  wasm.Config
	wasmOnce sync.Once
	wasm     *wasm.Engine
	wasmErr  error
	python   *pythonState

	// resumes are the resumes running here by pause id (retry.go);
	// closing is cancelled by Close, which waits for them (resumeWG).
	resumeMu    sync.Mutex
	resumes     map[string]*resumeRun
	closed      bool
	closing     context.Context
	stopClosing context.CancelFunc
	resumeWG    sync.WaitGroup

	tracing telemetry.Tracing
	// isolation names, per language, where scripts run: "worker" or
	// "inprocess" (a span attribute).
	isolation map[core.Language]string
}

// New returns an Executor; with Config.Workers it starts the worker pool.
// Call Close when done.
func New(cfg Config) (*Executor, error) {
	e := &Executor{
		reg:       cfg.Registry,
		policy:    cfg.Policy,
		engines:   map[core.Language]runtime.Engine{},
		maxSource: cfg.MaxSourceBytes,
		maxInput:  cfg.MaxInputBytes,
		schemas:   lru.New[[32]byte, *tools.Schema](maxCachedSchemas, nil),
		sent:      lru.New[string, struct{}](maxSentModules, nil),
		outputs:   lru.New[string, pausedOutputs](maxRememberedPauses, nil),
		wasmCfg:   cfg.WASM,
		durable:   cfg.Durable,
		outcomes:  cfg.Outcomes,
		approve:   cfg.Approve,
		onPark:    cfg.OnPark,
		tracing:   cfg.Tracing,
		isolation: map[core.Language]string{core.LanguageJavaScript: "inprocess", core.LanguageTypeScript: "inprocess", core.LanguageWASM: "inprocess", core.LanguagePython: "inprocess"},
		resumes:   map[string]*resumeRun{},
	}
	e.closing, e.stopClosing = context.WithCancel(context.Background())
	if e.reg == nil {
		e.reg = tools.NewRegistry()
	}
	if e.durable != nil {
		e.parked = newParkedSet(cfg.Parked)
	}
	if e.policy == (limits.Policy{}) {
		e.policy = limits.DefaultPolicy()
	}
	if err := e.policy.Validate(); err != nil {
		return nil, err
	}
	if e.maxSource <= 0 {
		e.maxSource = DefaultMaxSourceBytes
	}
	if e.maxInput <= 0 {
		e.maxInput = DefaultMaxInputBytes
	}
	only := map[core.Language]bool{}
	for _, l := range cfg.Languages {
		if !l.Valid() {
			return nil, fmt.Errorf("unknown language %d", int32(l))
		}
		only[l] = true
	}
	enabled := func(l core.Language) bool { return len(only) == 0 || only[l] }
	// The pool runs WebAssembly too in worker mode (and compiles its
	// modules): it is made even when only WebAssembly is enabled.
	if cfg.Workers != nil || enabled(core.LanguageJavaScript) || enabled(core.LanguageTypeScript) {
		if cfg.Workers != nil {
			wc := *cfg.Workers
			if wc.MaxExecutionMemoryBytes <= 0 {
				wc.MaxExecutionMemoryBytes = e.policy.Ceilings.MemoryBytes
			}
			if wc.WASM == (wasm.Config{}) {
				wc.WASM = cfg.WASM
			}
			pool, err := worker.NewPool(wc)
			if err != nil {
				return nil, err
			}
			e.pool = pool
			e.engines[core.LanguageJavaScript] = pool
			e.engines[core.LanguageTypeScript] = pool
			if wc.Mode == worker.ModeWorker {
				e.isolation[core.LanguageJavaScript] = "worker"
				e.isolation[core.LanguageTypeScript] = "worker"
				e.isolation[core.LanguageWASM] = "worker"
			}
		} else {
			j := js.New(js.WithWarmRuntimes(inProcessWarm))
			e.engines[core.LanguageJavaScript] = j
			e.engines[core.LanguageTypeScript] = ts.NewEngine(j, 0)
		}
	}
	for _, l := range []core.Language{core.LanguageJavaScript, core.LanguageTypeScript} {
		if !enabled(l) {
			delete(e.engines, l)
		}
	}
	if enabled(core.LanguageWASM) {
		e.engines[core.LanguageWASM] = lazyWASM{e}
	}
	e.python = &pythonState{cfg: cfg.Python}
	if e.python.cfg.MaxMemory <= 0 {
		e.python.cfg.MaxMemory = e.policy.Ceilings.MemoryBytes
	}
	if e.pool != nil && e.pool.Facts().Mode == worker.ModeWorker && !cfg.Python.InProcess {
		// Python runs in the worker processes, as WebAssembly does.
		e.python.pool = e.pool
		e.isolation[core.LanguagePython] = "worker"
	}
	if enabled(core.LanguagePython) {
		e.engines[core.LanguagePython] = lazyPython{e.python}
	}
	return e, nil
}

// Close releases the engines: the worker pool and the WebAssembly runtime.
// It stops the resumes still running (they end CANCELLED) and waits for
// them; other executions must have finished.
func (e *Executor) Close() error {
	e.resumeMu.Lock()
	e.closed = true
	e.resumeMu.Unlock()
	e.stopClosing()
	e.resumeWG.Wait()
	e.parked.closeAll()
	var err error
	if e.pool != nil {
		err = e.pool.Close()
	}
	e.wasmOnce.Do(func() {}) // no engine is created after Close
	if e.wasm != nil {
		if werr := e.wasm.Close(context.Background()); err == nil {
			err = werr
		}
	}
	if perr := e.python.close(); err == nil {
		err = perr
	}
	return err
}

// Registry returns the registry of server tools.
func (e *Executor) Registry() *tools.Registry { return e.reg }

// Policy returns the operator's defaults and ceilings.
func (e *Executor) Policy() limits.Policy { return e.policy }

// Workers returns the worker pool, nil when JavaScript runs in-process.
func (e *Executor) Workers() *worker.Pool { return e.pool }

// wasmWorkers returns the worker pool when WebAssembly runs in worker
// processes (ModeWorker), nil otherwise. Then this process never runs
// wazero on a module: the pool compiles modules in workers to check them,
// and runs them there.
func (e *Executor) wasmWorkers() *worker.Pool {
	if e.pool == nil || e.pool.Facts().Mode != worker.ModeWorker {
		return nil
	}
	return e.pool
}

// lazyWASM is the WASM engine: the wazero runtime is created on the first
// WASM request, so JavaScript-only executors never pay for it.
type lazyWASM struct{ e *Executor }

func (l lazyWASM) engine() (*wasm.Engine, error) {
	l.e.wasmOnce.Do(func() { l.e.wasm, l.e.wasmErr = wasm.New(l.e.wasmCfg) })
	if l.e.wasm == nil && l.e.wasmErr == nil {
		return nil, wasm.ErrClosed
	}
	return l.e.wasm, l.e.wasmErr
}

// Run implements runtime.Engine.
func (l lazyWASM) Run(ctx context.Context, job *runtime.Job) *runtime.Outcome {
	w, err := l.engine()
	if err != nil {
		return &runtime.Outcome{Err: fault.Wrap(fault.KindInternal, err, "the WebAssembly engine is unavailable")}
	}
	return w.Run(ctx, job)
}

// The schemas cache keeps compiled schemas of result schemas and client
// tools, which a harness sends again with every request: compiling a
// tool's schema of 25 values takes about 0.2 ms and 60 KB, ten times
// what finding it in the cache takes. It keeps up to maxCachedSchemas
// schemas of up to maxCachedSchemaValues values each (about 300 bytes a
// value compiled: 512 of the largest hold about 40 MB); larger ones are
// compiled for each request.
const (
	maxCachedSchemas      = 512
	maxCachedSchemaValues = 250
)

// compileSchema compiles a schema tenant sent, cached by the tenant and
// the schema's bytes: a tenant does not find, by its requests' timing,
// which schemas another tenant sends.
func (e *Executor) compileSchema(tenant string, raw []byte) (*tools.Schema, error) {
	h := sha256.New()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write(raw)
	var key [32]byte
	h.Sum(key[:0])
	if s, ok := e.schemas.Get(key); ok {
		return s, nil
	}
	s, err := tools.CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	if s.Values() <= maxCachedSchemaValues {
		e.schemas.Add(key, s)
	}
	return s, nil
}
