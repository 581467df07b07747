// Package js is ptc's JavaScript engine, on goja. Each execution gets a
// fresh goja runtime; the script is the body of an async function with
// `input`, `tools` and `console` bound; tool calls run on their own
// goroutines while promises are only ever settled on the VM goroutine,
// through a small event loop (loop.go), and failures are classified in
// classify.go.
//
// Scripts are hostile input, and in-process a Go stack overflow or
// out-of-memory kills the whole process, so the engine bounds what goja
// leaves unbounded (docs/RATIONALE.md, "The JavaScript engine against
// hostile scripts"):
//   - every parse runs with source maps off (no file is ever read);
//   - source text is nesting-checked before goja parses it, the program and
//     whatever eval and the Function constructors compile (eval.go);
//   - JSON.parse/stringify are depth-bounded (json.go, stringify.go);
//   - built-ins calling built-ins without a JavaScript frame between are
//     counted: every built-in a script can reach is a counting stand-in
//     (builtins.go, recursion.go), proxies and bound functions included;
//   - built-ins that allocate in one step are size-guarded against the
//     memory limit (guards.go, typed.go), those that walk an array's
//     indices one by one scan-guarded (scans.go), those that build BigInts
//     bit-guarded (bigint.go);
//   - the program is the wrapper function and nothing else: a script
//     cannot close it (shape.go);
//   - a regular expression cut off by regexp2's match timeout throws instead
//     of reporting no match (regexp.go);
//   - Go panics of goja on a script's doing are script errors.
//
// Guards on built-ins reachable only through a global are installed when
// code that could reach them is about to run (lazy.go). Go panics in host
// functions are recovered; an interrupted runtime is never reused; tool
// results become real JS values, never lazy Go wrappers.
//
// Package js imports runtime, bridge and internal packages, never gRPC.
package js

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsnest"
	"github.com/ptcrun/ptc/internal/lru"
	"github.com/ptcrun/ptc/internal/runtime"
)

const (
	// DefaultMaxCallStack is the default JS call-stack depth. Deep
	// recursion through native built-ins (String(o) calling o.toString
	// calling String(o)…) uses Go stack per frame, so the cap stays low;
	// built-ins calling built-ins directly are bounded by maxNativeDepth.
	DefaultMaxCallStack = 1000
	// DefaultProgramCache is the default number of compiled scripts kept.
	DefaultProgramCache = 512
	// RegexpMatchTimeout bounds one backtracking regular-expression match.
	RegexpMatchTimeout = 500 * time.Millisecond
	// drainGrace bounds how long a finished execution waits for tool
	// handlers that ignore their cancelled context.
	drainGrace = 2 * time.Second
)

// Engine runs JavaScript jobs. It is safe for concurrent use; each Run
// gets its own goja runtime.
type Engine struct {
	programs *lru.Cache[[32]byte, *compiled]
	maxStack int

	// builtins maps a holder of built-ins (a path such as
	// "Array.prototype") to its keys that hold built-in functions
	// (builtins.go), found by the first execution that counts it.
	builtinsMu sync.Mutex
	builtins   map[string][]builtinKey

	// warm holds runtimes made ahead (WithWarmRuntimes; nil: none),
	// warmGroups the guard groups of the latest program run (groupSizes
	// before any), which runtimes made ahead get, warming whether the
	// goroutine that fills warm runs (warm.go).
	warm       chan *exec
	warmGroups atomic.Uint32
	warming    atomic.Bool

	// standIns is the most stand-ins the guards of one runtime have made
	// (at most maxStandInHint), which a new runtime's maps are sized for.
	standIns atomic.Int32
}

// Option configures an Engine.
type Option func(*Engine)

// WithProgramCache sets how many compiled scripts are kept (LRU).
func WithProgramCache(n int) Option {
	return func(e *Engine) { e.programs = lru.New[[32]byte, *compiled](n, nil) }
}

// WithMaxCallStack sets the JS call-stack depth (at most 2,000).
func WithMaxCallStack(n int) Option {
	return func(e *Engine) {
		if n > 0 && n <= 2000 {
			e.maxStack = n
		}
	}
}

var regexpOnce sync.Once

// New returns an Engine.
func New(opts ...Option) *Engine {
	// regexp2 has no per-pattern hook in goja: its package-level default
	// match timeout is the only bound on catastrophic backtracking.
	regexpOnce.Do(func() { regexp2.DefaultMatchTimeout = RegexpMatchTimeout })
	e := &Engine{maxStack: DefaultMaxCallStack}
	for _, o := range opts {
		o(e)
	}
	if e.programs == nil {
		e.programs = lru.New[[32]byte, *compiled](DefaultProgramCache, nil)
	}
	// Before any program has run, runtimes made ahead get the size
	// guards, which most programs need (they read properties).
	e.warmGroups.Store(uint32(groupSizes))
	return e
}

// Source is a prepared script.
type Source struct {
	// Code is the script. Unless Wrapped is set it is the body of an
	// async function.
	Code string
	// Wrapped means Code is a complete script whose completion value is
	// the async main function (as produced by a transpiler).
	Wrapped bool
	// MapPosition, when set, maps a 1-based line and column of Code to
	// the caller's original source (e.g. TypeScript).
	MapPosition func(line, col int) (int, int, bool)
	// Program, when set, is Code already compiled by goja (with source
	// maps disabled) under the file name File; Code is then not parsed.
	Program *goja.Program
	// File is the name Program was compiled under (default "script.js").
	File string
	// Display is the file name shown in stack traces (default File).
	Display string
	// DisposeSymbols defines Symbol.dispose and Symbol.asyncDispose
	// (which goja lacks) for code that uses explicit resource management.
	DisposeSymbols bool
}

// parserOptions are the options of every parse of JavaScript that ptc does
// or that a script causes (eval, the Function constructors): source maps
// off, and a loader that refuses, so that no "//# sourceMappingURL="
// comment can make goja open a file on the host (by default it resolves
// the URL against the working directory and reads it).
var parserOptions = []parser.Option{
	parser.WithDisableSourceMaps,
	parser.WithSourceMapLoader(func(string) ([]byte, error) { return nil, errNoSourceMaps }),
}

// errNoSourceMaps is what the source map loader answers, should goja ever
// call it.
var errNoSourceMaps = errors.New("source maps are not loaded")

// compiled is a cached program and how to map its positions.
type compiled struct {
	prg      *goja.Program
	col1     int // columns to subtract on line 1 (body wrapper prefix)
	syntaxEr *fault.Error
	dispose  bool
	// groups are the guard groups the program needs (lazy.go);
	// generators: it has generator syntax (GeneratorFunction must be
	// guarded before it runs).
	groups     group
	generators bool
	file       string // name the program was compiled under
	display    string // name shown in stacks
}

const (
	scriptName = "script.js"
	bodyPrefix = "(async function(){"
	bodySuffix = "\n})"
)

// Compile compiles (or fetches from the cache) a source. A syntax error is
// returned as a KindSyntax *fault.Error with the position in the caller's
// source.
func (e *Engine) Compile(src Source) (*goja.Program, *fault.Error) {
	c := e.compile(src)
	return c.prg, c.syntaxEr
}

func (e *Engine) compile(src Source) *compiled {
	if src.Program != nil {
		groups, info, _ := scan(src.Code)
		c := &compiled{prg: src.Program, file: src.File, display: src.Display, dispose: src.DisposeSymbols,
			groups: groups, generators: info.Generators}
		if c.file == "" {
			c.file = scriptName
		}
		if c.display == "" {
			c.display = c.file
		}
		return c
	}
	key := sha256.Sum256([]byte(src.Code))
	if src.Wrapped {
		key[0] ^= 0xff
	}
	if c, ok := e.programs.Get(key); ok {
		return c
	}
	code, col1 := src.Code, 0
	if !src.Wrapped {
		code, col1 = bodyPrefix+src.Code+bodySuffix, len(bodyPrefix)
	}
	c := &compiled{col1: col1, file: scriptName, display: scriptName}
	// goja's parser and compiler recurse on nesting: deep text must not
	// reach them (see internal/jsnest).
	groups, info, ne := scan(code)
	c.groups, c.generators = groups, info.Generators
	if ne != nil {
		c.syntaxEr = positioned(&fault.Error{Kind: fault.KindSyntax, Message: "SyntaxError: " + ne.Message(), Cause: ne},
			ne.Line, ne.Column, col1, src.MapPosition)
	} else {
		ast, err := parse(scriptName, code)
		if err == nil && !src.Wrapped {
			// The text parsed; it must also have stayed the body of
			// the wrapper function (shape.go).
			c.syntaxEr = checkWrapper(ast, code, src.Code, src.MapPosition)
		}
		if err == nil && c.syntaxEr == nil {
			c.prg, err = jsnest.Compile(ast)
			if errors.Is(err, jsnest.ErrConstantTooLarge) {
				c.syntaxEr, err = &fault.Error{Kind: fault.KindScript, Message: "uncaught " + err.Error(), Cause: err}, nil
			}
		}
		if err != nil {
			c.syntaxEr = syntaxError(err, col1, src.MapPosition)
			if !src.Wrapped {
				// The scan behind the explanation is bounded by the
				// nesting check above.
				explainSyntax(c.syntaxEr, src.Code)
			}
		}
	}
	// Syntax errors are cached too: the same bad script fails the same way.
	e.programs.Add(key, c)
	return c
}

// Run executes job.Source as the body of an async function.
func (e *Engine) Run(ctx context.Context, job *runtime.Job) *runtime.Outcome {
	return e.RunSource(ctx, job, Source{Code: job.Source})
}

// RunSource executes a prepared source.
func (e *Engine) RunSource(ctx context.Context, job *runtime.Job, src Source) *runtime.Outcome {
	c := e.compile(src)
	if c.syntaxEr != nil {
		se := *c.syntaxEr
		return &runtime.Outcome{Err: &se}
	}
	x := e.takeWarm(c.groups)
	if x == nil {
		x = newExec(e)
	}
	x.attach(ctx, job, c, src.MapPosition)
	return x.run()
}

// parse is jsnest.Parse with ptc's parser options.
func parse(name, code string) (*ast.Program, error) {
	return jsnest.Parse(name, code, parserOptions...)
}
