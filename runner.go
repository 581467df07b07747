package ptc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/lru"
	"github.com/ptcrun/ptc/runtime"
	"github.com/ptcrun/ptc/runtime/js"
	"github.com/ptcrun/ptc/runtime/ts"
	"github.com/ptcrun/ptc/runtime/wasm"
	"github.com/ptcrun/ptc/tools"
)

// Request size bounds (defaults; see WithMaxSourceBytes and WithMaxInputBytes).
const (
	DefaultMaxSourceBytes = 1 << 20
	DefaultMaxInputBytes  = 8 << 20
	// MaxExecutionIDLength bounds a caller-chosen execution id.
	MaxExecutionIDLength = 128
)

// Runner executes scripts in-process. It is safe for concurrent use.
type Runner struct {
	reg       *tools.Registry
	wasmOnce  sync.Once
	wasm      *wasm.Engine
	wasmErr   error
	wasmOpts  []wasm.Option
	only      map[Language]bool
	policy    limits.Policy
	js        *js.Engine
	engines   map[Language]runtime.Engine
	maxSource int
	maxInput  int
	schemas   *lru.Cache[[32]byte, *tools.Schema]
}

// Option configures a Runner.
type Option func(*Runner) error

// WithTools registers server tools.
func WithTools(ts ...Tool) Option {
	return func(r *Runner) error {
		for _, t := range ts {
			if err := r.reg.Register(t); err != nil {
				return err
			}
		}
		return nil
	}
}

// WithRegistry uses reg (which may be shared) for server tools.
func WithRegistry(reg *tools.Registry) Option {
	return func(r *Runner) error { r.reg = reg; return nil }
}

// WithDefaults sets the limits used for fields a request leaves at zero.
func WithDefaults(l Limits) Option {
	return func(r *Runner) error { r.policy.Defaults = l; return nil }
}

// WithCeilings sets the largest limits a request may ask for.
func WithCeilings(l Limits) Option {
	return func(r *Runner) error { r.policy.Ceilings = l; return nil }
}

// WithMaxSourceBytes bounds a script's source (and a WASM module's bytes).
func WithMaxSourceBytes(n int) Option {
	return func(r *Runner) error { r.maxSource = n; return nil }
}

// WithMaxInputBytes bounds a request's input JSON.
func WithMaxInputBytes(n int) Option {
	return func(r *Runner) error { r.maxInput = n; return nil }
}

// WithEngine sets the engine for a language (TypeScript and WASM engines
// are plugged in this way; JavaScript has a built-in default).
func WithEngine(lang Language, e runtime.Engine) Option {
	return func(r *Runner) error { r.engines[lang] = e; return nil }
}

// WithWorkers runs JavaScript and TypeScript executions on e, typically a
// runtime/worker Pool of isolated worker processes.
func WithWorkers(e runtime.Engine) Option {
	return func(r *Runner) error {
		r.engines[LanguageJavaScript] = e
		r.engines[LanguageTypeScript] = e
		return nil
	}
}

// WithLanguages enables only the given languages; requests in any other
// language are refused as Unimplemented (an operator may, say, disable
// WebAssembly).
func WithLanguages(langs ...Language) Option {
	return func(r *Runner) error {
		r.only = map[Language]bool{}
		for _, l := range langs {
			if l < LanguageJavaScript || l > LanguageWASM {
				return fmt.Errorf("ptc: unknown language %d", int32(l))
			}
			r.only[l] = true
		}
		return nil
	}
}

// WithWASMOptions configures the built-in WebAssembly engine (created on
// the first WASM request), e.g. wasm.WithCacheDir or wasm.WithMaxModules.
func WithWASMOptions(opts ...wasm.Option) Option {
	return func(r *Runner) error { r.wasmOpts = append(r.wasmOpts, opts...); return nil }
}

// NewRunner returns a Runner with the JavaScript, TypeScript and
// WebAssembly engines and the options applied. Call Close when done.
func NewRunner(opts ...Option) (*Runner, error) {
	r := &Runner{
		reg:       tools.NewRegistry(),
		policy:    limits.DefaultPolicy(),
		js:        js.New(),
		engines:   map[Language]runtime.Engine{},
		maxSource: DefaultMaxSourceBytes,
		maxInput:  DefaultMaxInputBytes,
		schemas:   lru.New[[32]byte, *tools.Schema](256, nil),
	}
	r.engines[LanguageJavaScript] = r.js
	r.engines[LanguageTypeScript] = ts.NewEngine(r.js, 0)
	r.engines[LanguageWASM] = lazyWASM{r}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	if err := r.policy.Validate(); err != nil {
		return nil, err
	}
	if r.only != nil {
		for l := range r.engines {
			if !r.only[l] {
				delete(r.engines, l)
			}
		}
	}
	return r, nil
}

// lazyWASM is the default WASM engine: the wazero runtime is created on
// the first WASM request, so JavaScript-only runners never pay for it.
type lazyWASM struct{ r *Runner }

func (l lazyWASM) engine() (*wasm.Engine, error) {
	l.r.wasmOnce.Do(func() { l.r.wasm, l.r.wasmErr = wasm.New(l.r.wasmOpts...) })
	return l.r.wasm, l.r.wasmErr
}

// Run implements runtime.Engine.
func (l lazyWASM) Run(ctx context.Context, job *runtime.Job) *runtime.Outcome {
	e, err := l.engine()
	if err != nil {
		return &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal, Message: "the WebAssembly engine is unavailable", Cause: err}}
	}
	return e.Run(ctx, job)
}

// Close releases the runner's engines (the WebAssembly runtime and its
// compiled modules). Executions must have finished.
func (r *Runner) Close() error {
	if r.wasm != nil {
		return r.wasm.Close(context.Background())
	}
	return nil
}

// moduleEngine is a WASM engine that holds compiled modules by hash.
type moduleEngine interface {
	Compile(ctx context.Context, module []byte) (string, error)
	Has(hash string) bool
	RunHash(ctx context.Context, hash string, job *runtime.Job) (*runtime.Outcome, error)
}

func (r *Runner) moduleEngine(e runtime.Engine) (moduleEngine, error) {
	switch v := e.(type) {
	case lazyWASM:
		return v.engine()
	case moduleEngine:
		return v, nil
	}
	return nil, nil
}

// Register adds a server tool.
func (r *Runner) Register(t Tool) error { return r.reg.Register(t) }

// Tools returns the definitions of the server tools, sorted by name.
func (r *Runner) Tools() []Definition { return r.reg.Definitions() }

// Registry returns the registry of server tools.
func (r *Runner) Registry() *tools.Registry { return r.reg }

// Policy returns the runner's defaults and ceilings.
func (r *Runner) Policy() limits.Policy { return r.policy }

// JS returns the runner's JavaScript engine (for engines that build on it).
func (r *Runner) JS() *js.Engine { return r.js }

// Prepared is a request that passed every check and is ready to run.
type Prepared struct {
	req     Request
	id      string
	engine  runtime.Engine
	limits  Limits
	tools   []*tools.Compiled
	result  *tools.Schema
	modHash string
	lang    Language
	modEng  moduleEngine
	queued  time.Duration
	started time.Time
}

// ExecutionID returns the execution's id (generated if the request had none).
func (p *Prepared) ExecutionID() string { return p.id }

// Limits returns the effective limits.
func (p *Prepared) Limits() Limits { return p.limits }

// SetQueueTime records time spent waiting for admission, for the stats.
func (p *Prepared) SetQueueTime(d time.Duration) { p.queued = d }

// Execute checks a request and runs it. A request that cannot run at all
// returns a *RequestError; a script that fails returns a Result whose
// Error is set.
func (r *Runner) Execute(ctx context.Context, req Request) (*Result, error) {
	p, err := r.Prepare(req)
	if err != nil {
		return nil, err
	}
	return r.Run(ctx, p), nil
}

// Prepare checks a request: language, sizes, input JSON, limits, tools and
// result schema.
func (r *Runner) Prepare(req Request) (*Prepared, error) {
	lang := req.Language
	if lang == LanguageUnspecified {
		lang = LanguageJavaScript
	}
	if lang < LanguageJavaScript || lang > LanguageWASM {
		return nil, requestErr(InvalidArgument, "unknown language %d; use JAVASCRIPT, TYPESCRIPT or WASM", int32(req.Language))
	}
	eng, ok := r.engines[lang]
	if !ok {
		return nil, requestErr(Unimplemented, "%s scripts are not supported by this server", lang)
	}
	if lang == LanguageWASM {
		if len(req.Module) == 0 && req.ModuleSHA256 == "" {
			return nil, requestErr(InvalidArgument, "script.wasm_module is empty: send the module bytes or module_sha256")
		}
		if len(req.Module) > r.maxSource*16 {
			return nil, requestErr(InvalidArgument, "script.wasm_module is %d bytes, more than the %d allowed", len(req.Module), r.maxSource*16)
		}
	} else {
		if len(req.Source) == 0 {
			return nil, requestErr(InvalidArgument, "script.source is empty")
		}
		if len(req.Source) > r.maxSource {
			return nil, requestErr(InvalidArgument, "script.source is %d bytes, more than the %d allowed", len(req.Source), r.maxSource)
		}
		if !utf8.ValidString(req.Source) {
			return nil, requestErr(InvalidArgument, "script.source is not valid UTF-8")
		}
	}
	if len(req.Input) > r.maxInput {
		return nil, requestErr(InvalidArgument, "input_json is %d bytes, more than the %d allowed", len(req.Input), r.maxInput)
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return nil, requestErr(InvalidArgument, "input_json is not valid JSON")
	}
	if err := req.Limits.CheckRequest(); err != nil {
		return nil, requestErr(InvalidArgument, "limits: %v", err)
	}
	id := req.ExecutionID
	if id == "" {
		id = newID()
	} else if err := checkID(id); err != nil {
		return nil, err
	}
	p := &Prepared{req: req, id: id, engine: eng, lang: lang, limits: r.policy.Resolve(req.Limits)}
	if lang == LanguageWASM {
		if err := r.prepareModule(p); err != nil {
			return nil, err
		}
	}

	var err error
	if p.tools, err = r.selectTools(req); err != nil {
		return nil, err
	}
	if len(req.ResultSchema) > 0 {
		if p.result, err = r.compileResultSchema(req.ResultSchema); err != nil {
			return nil, requestErr(InvalidArgument, "result_schema_json: %v", err)
		}
	}
	return p, nil
}

// prepareModule compiles (or finds in the cache) the request's module, so
// that an invalid module is a request error and an unknown hash asks the
// caller to send the bytes.
func (r *Runner) prepareModule(p *Prepared) error {
	me, err := r.moduleEngine(p.engine)
	if err != nil {
		return requestErr(Unavailable, "the WebAssembly engine is unavailable: %v", err)
	}
	if me == nil {
		return nil // a plain engine: it gets the bytes
	}
	p.modEng = me
	if len(p.req.Module) == 0 {
		h := strings.ToLower(p.req.ModuleSHA256)
		if !me.Has(h) {
			return requestErr(FailedPrecondition, "module_sha256 %q is not held by this server; send the module bytes in wasm_module", p.req.ModuleSHA256)
		}
		p.modHash = h
		return nil
	}
	h, err := me.Compile(context.Background(), p.req.Module)
	if err != nil {
		if errors.Is(err, wasm.ErrInvalidModule) {
			return requestErr(InvalidArgument, "wasm_module: %v", err)
		}
		return requestErr(Unavailable, "wasm_module: %v", err)
	}
	if p.req.ModuleSHA256 != "" && !strings.EqualFold(p.req.ModuleSHA256, h) {
		return requestErr(InvalidArgument, "module_sha256 %q does not match the module's SHA-256 %s", p.req.ModuleSHA256, h)
	}
	p.modHash = h
	return nil
}

func checkID(id string) error {
	if len(id) > MaxExecutionIDLength {
		return requestErr(InvalidArgument, "execution_id is longer than %d bytes", MaxExecutionIDLength)
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			return requestErr(InvalidArgument, "execution_id must be printable ASCII without spaces")
		}
	}
	return nil
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "ex_" + hex.EncodeToString(b[:])
}

// selectTools resolves the allowed server tools and compiles client tools.
func (r *Runner) selectTools(req Request) ([]*tools.Compiled, error) {
	var out []*tools.Compiled
	seen := map[string]bool{}
	switch {
	case req.NoServerTools:
	case len(req.AllowedTools) == 0:
		out = r.reg.All()
		for _, c := range out {
			seen[c.Name] = true
		}
	default:
		for _, n := range req.AllowedTools {
			if seen[n] {
				continue
			}
			c, ok := r.reg.Lookup(n)
			if !ok {
				return nil, requestErr(InvalidArgument, "allowed_tools names unknown tool %q", n)
			}
			out = append(out, c)
			seen[n] = true
		}
	}
	for _, t := range req.ClientTools {
		if seen[t.Name] {
			return nil, requestErr(InvalidArgument, "client tool %q collides with a server tool of the same name", t.Name)
		}
		c, err := tools.Compile(t)
		if err != nil {
			return nil, requestErr(InvalidArgument, "client tool: %v", err)
		}
		for _, o := range out {
			if tools.NamespaceClash(o.Name, t.Name) {
				return nil, requestErr(InvalidArgument, "client tool %q clashes with tool %q: a name cannot also be a namespace", t.Name, o.Name)
			}
		}
		out = append(out, c)
		seen[t.Name] = true
	}
	return out, nil
}

func (r *Runner) compileResultSchema(raw json.RawMessage) (*tools.Schema, error) {
	key := sha256.Sum256(raw)
	if s, ok := r.schemas.Get(key); ok {
		return s, nil
	}
	s, err := tools.CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	r.schemas.Add(key, s)
	return s, nil
}

// Run executes a prepared request. It always returns a Result.
func (r *Runner) Run(ctx context.Context, p *Prepared) *Result {
	start := time.Now()
	p.started = start
	d := bridge.New(bridge.Config{
		ExecutionID:   p.id,
		Tools:         p.tools,
		MaxCalls:      p.limits.MaxToolCalls,
		MaxConcurrent: p.limits.MaxConcurrentToolCalls,
		Start:         start,
		KeepResults:   p.req.IncludeToolResults,
	})
	logs := runtime.NewLogBuffer(start, p.limits.MaxLogBytes, p.req.OnLog)
	job := &runtime.Job{
		Language:    p.lang.String(),
		ExecutionID: p.id,
		Source:      p.req.Source,
		Module:      p.req.Module,
		Input:       p.req.Input,
		Limits:      p.limits,
		Tools:       d,
		Logs:        logs,
	}
	if len(job.Input) == 0 {
		job.Input = json.RawMessage("null")
	}
	if p.req.Deterministic {
		job.Deterministic = true
		job.Seed = p.req.Seed
		if job.Seed == 0 {
			sum := sha256.Sum256([]byte(p.id))
			job.Seed = binary.BigEndian.Uint64(sum[:8])
		}
		job.ClockStart = p.req.ClockStart
		if job.ClockStart.IsZero() {
			job.ClockStart = time.Unix(0, 0).UTC()
		}
	}
	var out *runtime.Outcome
	if p.modEng != nil {
		out = safeRunHash(ctx, p.modEng, p.modHash, job)
	} else {
		out = safeRun(ctx, p.engine, job)
	}

	res := &Result{ExecutionID: p.id, EffectiveLimits: p.limits}
	if out.Err == nil && p.result != nil {
		if vs, err := p.result.Validate(out.Result); err != nil || len(vs) > 0 {
			msg := "the result is not valid JSON"
			if err == nil {
				msg = "the result does not match the result schema: " + tools.FormatViolations(vs)
			}
			out.Err = fault.New(fault.KindResultSchema, "%s", msg)
		}
	}
	if out.Err != nil {
		if out.Err.Kind == fault.KindToolCallLimit || (out.Err.Kind == fault.KindScript && d.LimitHit() && out.Err.Tool != "") {
			out.Err.Limit = int64(p.limits.MaxToolCalls)
		}
		res.Error = out.Err
	} else {
		res.Result = out.Result
	}
	res.Logs, res.LogsTruncated = logs.Entries()
	res.Trace = d.Trace()
	res.Stats = Stats{
		Duration:        time.Since(start),
		CPUTime:         out.CPUTime,
		QueueTime:       p.queued,
		PeakMemoryBytes: out.PeakMemoryBytes,
		ToolCalls:       d.Calls(),
		ToolResultBytes: d.ResultBytes(),
		OutputBytes:     int64(len(res.Result)),
		LogBytes:        logs.Bytes(),
	}
	res.ModelMessage = ModelMessage(res)
	return res
}

// safeRunHash runs a held module; a module evicted since Prepare is an
// internal failure (the caller may retry with the bytes).
func safeRunHash(ctx context.Context, me moduleEngine, hash string, job *runtime.Job) (out *runtime.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal, Message: "internal error", Cause: fmt.Errorf("engine panic: %v", p)}}
		}
	}()
	out, err := me.RunHash(ctx, hash, job)
	if err != nil {
		return &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal,
			Message: "the module was evicted from the server's cache before it ran; send the module bytes again", Cause: err}}
	}
	return out
}

// safeRun runs an engine, turning a panic into an INTERNAL failure.
func safeRun(ctx context.Context, e runtime.Engine, job *runtime.Job) (out *runtime.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal, Message: "internal error",
				Cause: fmt.Errorf("engine panic: %v", p)}}
		}
	}()
	out = e.Run(ctx, job)
	if out == nil {
		out = &runtime.Outcome{Err: fault.New(fault.KindInternal, "internal error")}
	}
	return out
}
