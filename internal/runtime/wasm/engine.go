package wasm

import (
	"container/list"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/ptcrun/ptc/internal/abi"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
)

// Errors a caller may test with errors.Is.
var (
	// ErrInvalidModule means the module bytes are not a module this engine
	// can run: not WebAssembly, invalid, too large, not a WASI command (no
	// _start), or importing something other than wasi_snapshot_preview1
	// and ptc_v1. A server maps it to INVALID_ARGUMENT.
	ErrInvalidModule = errors.New("invalid WebAssembly module")
	// ErrUnknownModule means RunHash was given a hash the engine does not
	// hold (never compiled, or evicted). A server maps it to
	// FAILED_PRECONDITION so that the client resends the module bytes.
	ErrUnknownModule = errors.New("unknown module hash")
	// ErrCompileLimit means a module could not be compiled within the
	// engine's compile timeout (Bounds.CompileTimeout) or, compiled in a
	// worker process, within Bounds.CompileMemoryBytes, or its compilation
	// was stopped because every request waiting for it gave up. A server
	// maps it to RESOURCE_EXHAUSTED.
	ErrCompileLimit = errors.New("WebAssembly compile limit")
	// ErrClosed means the engine was closed.
	ErrClosed = errors.New("wasm engine is closed")
)

// Config configures an Engine. The zero value is a useful default.
type Config struct {
	// MaxModules bounds the compiled modules kept in the cache (default
	// 64); the least recently used one is evicted first.
	MaxModules int
	// MaxCacheBytes bounds the memory of the compiled modules kept in the
	// cache (default 512 MiB), each reckoned at 5 bytes per byte of its
	// binary (its machine code and decoded form); the least recently used
	// are evicted first, never the module just compiled.
	MaxCacheBytes int64
	// MaxModuleBytes bounds the size of a module (default 64 MiB).
	MaxModuleBytes int
	// MaxMemory is the most memory any execution may use (default the
	// memory ceiling of limits.Ceilings, 2 GiB): a job's MemoryBytes above
	// it (or zero) is clamped to it.
	MaxMemory int64
	// CacheDir keeps wazero's compiled code in a directory as well, so that
	// a restarted engine loads a module it compiled before instead of
	// compiling it again.
	CacheDir string
	// RealClock gives guests the host's wall clock and monotonic clock, and
	// makes their sleeps real (a sleep still ends when the execution does).
	// By default guests see a virtual clock that starts at
	// 2022-01-01T00:00:00Z and advances 1ms per reading, and sleeps return
	// at once.
	RealClock bool
	// RealRandom gives guests random bytes from crypto/rand. By default
	// random_get returns the same deterministic sequence in every
	// execution.
	RealRandom bool
	// Interpreter runs modules in wazero's interpreter instead of compiling
	// them to machine code: slower, but available on every platform.
	Interpreter bool
	// NoLoopChecks compiles modules without the per-loop checks that let a
	// cancelled context stop a guest that never calls the host. Tight loops
	// run several times faster, but a spinning guest can then only be
	// stopped by ending the process — and in-process it can freeze the
	// whole process at the next garbage collection. Use it only in an engine
	// that runs inside a worker process the supervisor kills at the
	// deadline.
	NoLoopChecks bool
	// Bounds bounds the structure of modules and their compilation; zero
	// fields take their defaults (see WithDefaults).
	Bounds Bounds
}

// WithDefaults returns c with every zero field (bounds included) set to
// the default an Engine applies.
func (c Config) WithDefaults() Config {
	if c.MaxModules < 1 {
		c.MaxModules = 64
	}
	if c.MaxModuleBytes <= 0 {
		c.MaxModuleBytes = 64 << 20
	}
	if c.MaxCacheBytes <= 0 {
		c.MaxCacheBytes = 512 << 20
	}
	if c.MaxMemory <= 0 {
		c.MaxMemory = limits.Ceilings().MemoryBytes
	}
	c.Bounds = c.Bounds.withDefaults()
	return c
}

// Engine runs WebAssembly jobs. It is safe for concurrent use; Close
// releases it.
type Engine struct {
	opts    Config
	rt      wazero.Runtime
	allowed map[string]map[string]api.FunctionDefinition

	regions regionPool

	mu        sync.Mutex
	closed    bool
	compiling sync.WaitGroup // compilations in flight
	// compileSlots holds a token per compilation running in wazero
	// (Bounds.MaxConcurrentCompiles).
	compileSlots chan struct{}
	entries      map[string]*entry
	lru          *list.List // of *entry, most recently used first
	// cachedBytes sums the cost of the modules in lru.
	cachedBytes int64

	compiles  atomic.Int64
	hits      atomic.Int64
	evictions atomic.Int64
}

var _ runtime.Engine = (*Engine)(nil)

// New returns an Engine with a wazero runtime, the WASI preview1 and ptc_v1
// host modules, and an empty module cache.
func New(o Config) (*Engine, error) {
	o = o.WithDefaults()
	var cfg wazero.RuntimeConfig
	if o.Interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	} else {
		cfg = wazero.NewRuntimeConfig()
	}
	// The runtime allows the full 4 GiB of wasm32 memory: the limit of each
	// execution is applied by its memory allocator (see allocator), so that
	// one runtime and its compiled modules serve executions with different
	// limits, and so that a refused grow is known to be a limit.
	cfg = cfg.WithCloseOnContextDone(!o.NoLoopChecks)
	if o.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(o.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache directory %q: %w", o.CacheDir, err)
		}
		cfg = cfg.WithCompilationCache(cache)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiate WASI: %w", err)
	}
	host, err := instantiateHost(ctx, rt)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiate %s: %w", abi.ModuleName, err)
	}
	e := &Engine{
		opts:    o,
		rt:      rt,
		regions: regionPool{reserve: min(uint64(o.MaxMemory), maxWasm32Memory)},
		allowed: map[string]map[string]api.FunctionDefinition{
			abi.WASIModuleName: rt.Module(abi.WASIModuleName).ExportedFunctionDefinitions(),
			abi.ModuleName:     host.ExportedFunctionDefinitions(),
		},
		entries:      map[string]*entry{},
		lru:          list.New(),
		compileSlots: make(chan struct{}, o.Bounds.MaxConcurrentCompiles),
	}
	return e, nil
}

// Close releases the runtime and every compiled module. Executions still
// running end with an error; later calls fail with ErrClosed.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.entries = map[string]*entry{}
	e.lru.Init()
	e.cachedBytes = 0
	e.mu.Unlock()
	// No compilation may run on a closed runtime (wazero panics): wait for
	// those in flight; none starts once closed is set.
	e.compiling.Wait()
	err := e.rt.Close(ctx)
	e.regions.close()
	return err
}

func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// cacheStats counts the work of the module cache.
type cacheStats struct {
	// Compiles is the number of compilations run (failed ones included).
	Compiles int64
	// Hits is the number of requests that found their module compiled or
	// being compiled by another request.
	Hits int64
	// Evictions is the number of modules dropped to respect the bound.
	Evictions int64
	// Cached is the number of modules held now.
	Cached int
	// CachedBytes is what they are reckoned to take.
	CachedBytes int64
}

// stats returns the cache counters.
func (e *Engine) stats() cacheStats {
	e.mu.Lock()
	n, b := e.lru.Len(), e.cachedBytes
	e.mu.Unlock()
	return cacheStats{Compiles: e.compiles.Load(), Hits: e.hits.Load(), Evictions: e.evictions.Load(), Cached: n, CachedBytes: b}
}

// Has reports whether the module with the given hex SHA-256 (the hex SHA-256 of its bytes) is
// compiled and cached.
func (e *Engine) Has(hash string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ent, ok := e.entries[strings.ToLower(hash)]
	if !ok {
		return false
	}
	select {
	case <-ent.done:
		return ent.err == nil
	default:
		return false
	}
}

// Compile validates and compiles module into the cache (if it is not there
// yet) and returns its hash. Errors wrap ErrInvalidModule for modules the
// engine cannot run (a server calls Compile while validating a request so
// that such a module is refused with INVALID_ARGUMENT), ErrCompileLimit
// for one that did not compile within the compile timeout, or are ctx's
// error when the caller gave up first (the compile stops if no one else
// waits for it).
func (e *Engine) Compile(ctx context.Context, module []byte) (string, error) {
	ent, err := e.acquire(ctx, module)
	if err != nil {
		return "", err
	}
	e.release(ent)
	return ent.hash, nil
}

// compileModule compiles bin and checks that the engine can run it. It
// waits for a compile slot (MaxConcurrentCompiles) and ends when ctx does:
// wazero looks at ctx between two functions of the module.
func (e *Engine) compileModule(ctx context.Context, bin []byte) (wazero.CompiledModule, moduleShape, error) {
	// wazero's decoding, validation and compilation cost what the module
	// declares, and cannot be interrupted before it compiles functions:
	// bound it first.
	if err := checkStructure(bin, e.opts.Bounds); err != nil {
		return nil, moduleShape{}, err
	}
	select {
	case e.compileSlots <- struct{}{}:
		defer func() { <-e.compileSlots }()
	case <-ctx.Done():
		return nil, moduleShape{}, e.compileStopped(ctx)
	}
	// The module runs with a maximum on each of its tables (see
	// boundTables); the cache knows it by the hash of the bytes it was sent.
	bin = boundTables(bin)
	// With more than one compilation worker, wazero checks ctx before
	// each function it compiles.
	compiled, err := e.rt.CompileModule(experimental.WithCompilationWorkers(ctx, 2), bin)
	if err != nil {
		if ctx.Err() != nil {
			return nil, moduleShape{}, e.compileStopped(ctx)
		}
		return nil, moduleShape{}, fmt.Errorf("%w: %s", ErrInvalidModule, firstLine(err.Error()))
	}
	if ctx.Err() != nil {
		_ = compiled.Close(context.Background())
		return nil, moduleShape{}, e.compileStopped(ctx)
	}
	shape, err := scanModule(bin)
	if err == nil {
		err = e.checkModule(compiled, shape)
	}
	if err != nil {
		_ = compiled.Close(context.Background())
		return nil, moduleShape{}, err
	}
	return compiled, shape, nil
}

// compileStopped is the error of a compilation that ctx ended: its
// deadline (the compile timeout) or every caller giving up.
func (e *Engine) compileStopped(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: the module took more than %s to compile; send a smaller module", ErrCompileLimit, e.opts.Bounds.CompileTimeout)
	}
	return fmt.Errorf("%w: its compilation was stopped: every request waiting for it gave up", ErrCompileLimit)
}

func (e *Engine) checkModule(c wazero.CompiledModule, shape moduleShape) error {
	for _, imp := range shape.imports {
		funcs, ok := e.allowed[imp.module]
		if !ok {
			return fmt.Errorf("%w: it imports %s %q from module %q; only %s and %s can be imported",
				ErrInvalidModule, imp.kindName(), imp.name, imp.module, abi.WASIModuleName, abi.ModuleName)
		}
		if imp.kind != 0 {
			return fmt.Errorf("%w: it imports %s %q from %q, which provides only functions",
				ErrInvalidModule, imp.kindName(), imp.name, imp.module)
		}
		if _, ok := funcs[imp.name]; !ok {
			return fmt.Errorf("%w: it imports function %q from %q, which has no such function; available: %s",
				ErrInvalidModule, imp.name, imp.module, strings.Join(sortedKeys(funcs), ", "))
		}
	}
	for _, f := range c.ImportedFunctions() {
		mod, name, _ := f.Import()
		want := e.allowed[mod][name]
		if want == nil {
			continue // reported above
		}
		if !sameTypes(f.ParamTypes(), want.ParamTypes()) || !sameTypes(f.ResultTypes(), want.ResultTypes()) {
			return fmt.Errorf("%w: it imports %s.%s with signature %s, but the host provides %s",
				ErrInvalidModule, mod, name, signature(f), signature(want))
		}
	}
	start, ok := c.ExportedFunctions()["_start"]
	if !ok {
		return fmt.Errorf("%w: it exports no _start function; build it as a WASI command (e.g. GOOS=wasip1 GOARCH=wasm go build)", ErrInvalidModule)
	}
	if len(start.ParamTypes()) != 0 || len(start.ResultTypes()) != 0 {
		return fmt.Errorf("%w: its _start function has signature %s; it must take and return nothing", ErrInvalidModule, signature(start))
	}
	if shape.tableMinElems > maxTableElements {
		return fmt.Errorf("%w: its tables start with %d elements, more than the %d allowed", ErrInvalidModule, shape.tableMinElems, maxTableElements)
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(f api.FunctionDefinition) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return names(f.ParamTypes()) + " -> " + names(f.ResultTypes())
}

func sortedKeys(m map[string]api.FunctionDefinition) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// cryptoReader is crypto/rand as an io.Reader value.
type cryptoReader struct{}

func (cryptoReader) Read(p []byte) (int, error) { return rand.Read(p) }

// Sleeper returns a nanosleep (wazero's sys.Nanosleep) that ends early
// when ctx is done: a guest's sleep never outlives its execution.
func Sleeper(ctx context.Context) func(ns int64) {
	return func(ns int64) {
		if ns <= 0 {
			return
		}
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}
