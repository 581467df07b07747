package executor

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/tools"
)

// Prepared is a request that passed every check and is ready to run.
type Prepared struct {
	req     core.Request
	id      string
	engine  runtime.Engine
	limits  limits.Limits
	tools   []*tools.Compiled
	result  *tools.Schema
	modHash string
	modEng  *wasm.Engine
	det     core.Determinism
	queued  time.Duration

	// approvals names the tools whose calls need approval, with why.
	approvals map[string]string
	// resumable: the execution may pause (see resumable.go); clientNames
	// are its client tools, whose calls pause it.
	resumable   bool
	clientNames []string
	// resume is set when p resumes a paused execution.
	resume *resumed
}

// ExecutionID returns the execution's id (generated if the request had none).
func (p *Prepared) ExecutionID() string { return p.id }

// Language returns the script's language (unspecified resolved).
func (p *Prepared) Language() core.Language { return p.req.Language }

// Request returns the request p runs (for a resume, the paused one's).
func (p *Prepared) Request() core.Request { return p.req }

// Limits returns the effective limits.
func (p *Prepared) Limits() limits.Limits { return p.limits }

// SetQueueTime records time spent waiting for admission, for the stats.
func (p *Prepared) SetQueueTime(d time.Duration) { p.queued = d }

// Prepare checks a request once — language, sizes, input JSON, execution
// id, limits, tools, result schema, module — and resolves its limits once,
// under the policy narrowed by tenant (the caller's ceilings; zero adds
// none). A request that cannot run is a *fault.Error with a Code.
func (e *Executor) Prepare(req core.Request, tenant limits.Limits) (*Prepared, *fault.Error) {
	return e.PrepareContext(context.Background(), req, tenant)
}

// PrepareContext is Prepare for a caller that may give up: the compilation
// of a WebAssembly module is waited for only while ctx lasts, and stops
// when no caller waits for it any more.
func (e *Executor) PrepareContext(ctx context.Context, req core.Request, tenant limits.Limits) (*Prepared, *fault.Error) {
	req.Language = req.Language.Or(core.LanguageJavaScript)
	if !req.Language.Valid() {
		return nil, fault.Reject(fault.CodeInvalidArgument, "unknown language %d; use JAVASCRIPT, TYPESCRIPT, WASM or PYTHON", int32(req.Language))
	}
	eng, ok := e.engines[req.Language]
	if !ok {
		return nil, fault.Reject(fault.CodeUnimplemented, "%s scripts are not supported by this server", req.Language)
	}
	if err := e.checkScript(req.Script); err != nil {
		return nil, err
	}
	if len(req.Input) > e.maxInput {
		return nil, fault.Reject(fault.CodeInvalidArgument, "input_json is %d bytes, more than the %d allowed", len(req.Input), e.maxInput)
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return nil, fault.Reject(fault.CodeInvalidArgument, "input_json is not valid JSON")
	}
	if err := req.Limits.Check(); err != nil {
		return nil, fault.Reject(fault.CodeInvalidArgument, "%v", err)
	}
	if req.Overflow < core.OverflowUnspecified || req.Overflow > core.OverflowTruncate {
		return nil, fault.Reject(fault.CodeInvalidArgument, "overflow_policy %d is unknown; use OVERFLOW_POLICY_FAIL or OVERFLOW_POLICY_TRUNCATE", int32(req.Overflow))
	}
	if err := tenant.Check(); err != nil {
		return nil, &fault.Error{Code: fault.CodeInternal, Message: "the tenant's ceilings are invalid", Cause: err}
	}
	id := req.ExecutionID
	if id == "" {
		id = newID()
	} else if err := CheckExecutionID(id); err != nil {
		return nil, err
	}
	if req.Resumable {
		if e.durable == nil {
			return nil, fault.Reject(fault.CodeFailedPrecondition, "this server does not run resumable executions (it has no continuation keys)").Because(fault.ReasonResumableUnsupported)
		}
		// A resumable execution is re-run to resume it: it is always
		// deterministic, its virtual clock starting now unless set.
		req.Deterministic = true
		if !req.ClockStartSet {
			req.ClockStart, req.ClockStartSet = time.Now().UTC().Truncate(time.Millisecond), true
		}
	}
	p := &Prepared{req: req, id: id, engine: eng, limits: e.policy.Resolve(req.Limits, tenant), det: determinism(req.Determinism, id),
		resumable: req.Resumable}
	if req.Language == core.LanguageWASM {
		if err := e.prepareModule(ctx, p); err != nil {
			return nil, err
		}
	}
	if req.Language == core.LanguagePython {
		if err := e.preparePython(); err != nil {
			return nil, err
		}
	}
	var err *fault.Error
	if p.tools, err = e.selectTools(req); err != nil {
		return nil, err
	}
	if p.approvals, err = e.approvalsOf(req, p.tools); err != nil {
		return nil, err
	}
	for _, t := range req.ClientTools {
		p.clientNames = append(p.clientNames, t.Name)
	}
	if len(req.ResultSchema) > 0 {
		s, serr := e.compileSchema(req.Tenant, req.ResultSchema)
		if serr != nil {
			return nil, fault.Reject(fault.CodeInvalidArgument, "result_schema_json: %v", serr)
		}
		p.result = s
	}
	return p, nil
}

// checkScript bounds the program.
func (e *Executor) checkScript(s core.Script) *fault.Error {
	if s.Language == core.LanguageWASM {
		if len(s.Module) == 0 && s.ModuleSHA256 == "" {
			return fault.Reject(fault.CodeInvalidArgument, "script.wasm_module is empty: send the module bytes or module_sha256")
		}
		if s.ModuleSHA256 != "" && !isSHA256(s.ModuleSHA256) {
			return fault.Reject(fault.CodeInvalidArgument, "script.module_sha256 is not a SHA-256 digest (64 lowercase hexadecimal digits): %q", core.Clip(s.ModuleSHA256, core.QuotedBytes))
		}
		if max := e.maxSource * wasmModuleFactor; len(s.Module) > max {
			return fault.Reject(fault.CodeInvalidArgument, "script.wasm_module is %d bytes, more than the %d allowed", len(s.Module), max)
		}
		return nil
	}
	switch {
	case len(s.Module) > 0 || s.ModuleSHA256 != "":
		return fault.Reject(fault.CodeInvalidArgument, "script.wasm_module and script.module_sha256 are for LANGUAGE_WASM only; a %s script is sent in script.source", s.Language)
	case len(s.Source) == 0:
		return fault.Reject(fault.CodeInvalidArgument, "script.source is empty")
	case len(s.Source) > e.maxSource:
		return fault.Reject(fault.CodeInvalidArgument, "script.source is %d bytes, more than the %d allowed", len(s.Source), e.maxSource)
	case !utf8.ValidString(s.Source):
		return fault.Reject(fault.CodeInvalidArgument, "script.source is not valid UTF-8")
	}
	return nil
}

// CheckExecutionID enforces the contract of a caller-chosen execution id:
// at most MaxExecutionIDLength bytes of ASCII letters, digits and "._:-".
func CheckExecutionID(id string) *fault.Error {
	if len(id) > MaxExecutionIDLength {
		return fault.Reject(fault.CodeInvalidArgument, "execution_id is longer than %d bytes", MaxExecutionIDLength)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fault.Reject(fault.CodeInvalidArgument, "execution_id may hold only ASCII letters, digits and \"._:-\" (found %q at byte %d)", rune(c), i)
		}
	}
	return nil
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "ex_" + hex.EncodeToString(b[:])
}

// determinism resolves a request's determinism: a zero seed is derived
// from the execution id, a clock start not given is the Unix epoch.
func determinism(d core.Determinism, id string) core.Determinism {
	if !d.Deterministic {
		return core.Determinism{}
	}
	if d.Seed == 0 {
		sum := sha256.Sum256([]byte(id))
		d.Seed = binary.BigEndian.Uint64(sum[:8])
	}
	if !d.ClockStartSet {
		d.ClockStart = time.Unix(0, 0).UTC()
	}
	d.ClockStartSet = true
	return d
}

// prepareModule compiles (or finds in the cache) the request's module, so
// that an invalid module is a request error and an unknown hash asks the
// caller to send the bytes.
func (e *Executor) prepareModule(ctx context.Context, p *Prepared) *fault.Error {
	l, ok := p.engine.(lazyWASM)
	if !ok {
		return nil // an engine plugged in by a test: it gets the bytes
	}
	if pool := e.wasmWorkers(); pool != nil {
		// The pool checks the module (its structure here, its compile in a
		// worker) and keeps its bytes; this process never compiles it.
		has, compile := e.tenantModules(p.req.Tenant, pool.HasModule, pool.CompileModule)
		return checkModule(ctx, p, has, compile)
	}
	me, err := l.engine()
	if err != nil {
		return fault.Reject(fault.CodeUnavailable, "the WebAssembly engine is unavailable: %v", err)
	}
	p.modEng = me
	has, compile := e.tenantModules(p.req.Tenant, me.Has, me.Compile)
	return checkModule(ctx, p, has, compile)
}

// maxSentModules bounds the (tenant, module) pairs Executor.sent keeps: a
// pair it has forgotten costs its tenant one resend of the bytes, the
// answer to a digest the server does not hold.
const maxSentModules = 4096

// sentKey is the key of Executor.sent for tenant and digest h.
func sentKey(tenant, h string) string { return tenant + "\x00" + h }

// tenantModules wraps a module store's has and compile for tenant: has
// holds only modules the tenant sent, and compile remembers who sent one
// and names the tenant to the pool (its bound on a tenant's compiles,
// worker.MaxOwnerCompiles, and its turns).
func (e *Executor) tenantModules(tenant string, has func(string) bool, compile func(context.Context, []byte) (string, error)) (func(string) bool, func(context.Context, []byte) (string, error)) {
	tenantHas := func(h string) bool {
		_, sent := e.sent.Get(sentKey(tenant, h))
		return sent && has(h)
	}
	tenantCompile := func(ctx context.Context, b []byte) (string, error) {
		h, err := compile(worker.WithCompileOwner(ctx, tenant), b)
		if err == nil {
			e.rememberSent(tenant, h)
		}
		return h, err
	}
	return tenantHas, tenantCompile
}

// rememberSent records that tenant sent the bytes of module h.
func (e *Executor) rememberSent(tenant, h string) { e.sent.Add(sentKey(tenant, h), struct{}{}) }

// checkModule sets p's module hash: the module sent by hash must be held
// (has), the one sent as bytes is checked and kept (compile) and must
// match the hash sent with it.
func checkModule(ctx context.Context, p *Prepared, has func(string) bool, compile func(context.Context, []byte) (string, error)) *fault.Error {
	if len(p.req.Module) == 0 {
		h := strings.ToLower(p.req.ModuleSHA256)
		if !has(h) {
			return fault.Reject(fault.CodeFailedPrecondition, "module_sha256 %q is not held by this server; send the module bytes in wasm_module", p.req.ModuleSHA256).Because(fault.ReasonModuleMissing)
		}
		p.modHash = h
		return nil
	}
	h, err := compile(ctx, p.req.Module)
	if err != nil {
		return compileFault("wasm_module: ", err)
	}
	if p.req.ModuleSHA256 != "" && !strings.EqualFold(p.req.ModuleSHA256, h) {
		return fault.Reject(fault.CodeInvalidArgument, "module_sha256 %q does not match the module's SHA-256 %s", p.req.ModuleSHA256, h)
	}
	p.modHash = h
	return nil
}

// maxClientSchemaValues bounds the JSON values in all the schemas of one
// request's client tools, twice what tools.CompileSchema takes in one:
// compiling them is ptcd's work, before admission (about 20 µs and 450
// bytes a value; a schema the tenant sent before comes from the cache,
// compileSchema).
const maxClientSchemaValues = 20_000

// MaxClientTools bounds the client tools of one request: a harness
// declares tens of tools, and every one costs ptcd work before admission
// (its name checked against the others', its schemas compiled or found).
const MaxClientTools = 1024

// selectTools resolves the allowed server tools and compiles client tools.
func (e *Executor) selectTools(req core.Request) ([]*tools.Compiled, *fault.Error) {
	var out []*tools.Compiled
	seen := map[string]bool{}   // every tool's name
	client := map[string]bool{} // the client tools' names
	values := 0                 // JSON values in the client tools' schemas
	schema := func(raw json.RawMessage) (*tools.Schema, error) { return e.compileSchema(req.Tenant, raw) }
	switch {
	case req.NoServerTools:
	case len(req.AllowedTools) == 0:
		out = e.reg.All()
		for _, c := range out {
			seen[c.Name] = true
		}
	default:
		for _, n := range req.AllowedTools {
			if seen[n] {
				continue
			}
			c, ok := e.reg.Lookup(n)
			if !ok {
				return nil, fault.Reject(fault.CodeInvalidArgument, "allowed_tools names unknown tool %q", core.Clip(n, core.QuotedBytes))
			}
			out = append(out, c)
			seen[n] = true
		}
	}
	if len(req.ClientTools) > MaxClientTools {
		return nil, fault.Reject(fault.CodeInvalidArgument, "%d client tools: a request declares at most %d", len(req.ClientTools), MaxClientTools)
	}
	// spaces maps each namespace of a tool selected so far ("a" and "a.b"
	// of "a.b.c") to that tool's name: a client tool's name clashes with a
	// tool's when one is a namespace of the other, found without comparing
	// every pair.
	spaces := map[string]string{}
	addSpaces := func(name string) {
		for i := 0; i < len(name); i++ {
			if name[i] == '.' {
				if _, ok := spaces[name[:i]]; !ok {
					spaces[name[:i]] = name
				}
			}
		}
	}
	for _, o := range out {
		addSpaces(o.Name)
	}
	for _, t := range req.ClientTools {
		if client[t.Name] {
			return nil, fault.Reject(fault.CodeInvalidArgument, "client tool %q is declared twice; declare each client tool once", t.Name)
		}
		if seen[t.Name] {
			return nil, fault.Reject(fault.CodeInvalidArgument, "client tool %q collides with a server tool of the same name", t.Name)
		}
		if t.Handler == nil && req.Resumable {
			// Its calls pause the execution: the handler never runs.
			t.Handler = unreachable
		}
		c, err := tools.CompileWith(t, schema)
		if err != nil {
			return nil, fault.Reject(fault.CodeInvalidArgument, "client_tools: %v", err)
		}
		if values += c.Input.Values(); c.Output != nil {
			values += c.Output.Values()
		}
		if values > maxClientSchemaValues {
			return nil, fault.Reject(fault.CodeInvalidArgument, "client tools: their schemas have more than %d JSON values in all", maxClientSchemaValues)
		}
		if other, ok := spaces[t.Name]; ok {
			return nil, fault.Reject(fault.CodeInvalidArgument, "client tool %q clashes with tool %q: a name cannot also be a namespace", t.Name, other)
		}
		for i := 0; i < len(t.Name); i++ {
			if t.Name[i] == '.' && seen[t.Name[:i]] {
				return nil, fault.Reject(fault.CodeInvalidArgument, "client tool %q clashes with tool %q: a name cannot also be a namespace", t.Name, t.Name[:i])
			}
		}
		addSpaces(t.Name)
		out = append(out, c)
		seen[t.Name] = true
		client[t.Name] = true
	}
	return out, nil
}

// isSHA256 reports whether s is a lowercase hex SHA-256 digest, the one
// spelling the contract accepts.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// unreachable is the handler of a resumable execution's client tool: its
// calls wait for the caller and never reach a handler.
func unreachable(context.Context, tools.Call) (json.RawMessage, error) {
	return nil, tools.Errorf(tools.CodeToolFailed, "a client tool of a resumable execution is answered by its caller")
}

// approvalsOf names the selected server tools whose calls need approval,
// each with why: its definition says so, the server's configuration
// does, or the request asks to approve it (a name the script cannot call
// is refused).
func (e *Executor) approvalsOf(req core.Request, selected []*tools.Compiled) (map[string]string, *fault.Error) {
	client := map[string]bool{}
	for _, t := range req.ClientTools {
		client[t.Name] = true
	}
	asked := map[string]bool{}
	for _, n := range req.RequireApproval {
		asked[n] = true
	}
	var out map[string]string
	set := func(name, why string) {
		if out == nil {
			out = map[string]string{}
		}
		if _, ok := out[name]; !ok {
			out[name] = why
		}
	}
	for _, t := range selected {
		if client[t.Name] {
			continue
		}
		switch {
		case asked[t.Name]:
			set(t.Name, "the caller asked to approve its calls")
			delete(asked, t.Name)
		default:
			if why, ok := e.serverApproval(t.Definition); ok {
				set(t.Name, why)
			}
		}
	}
	for _, n := range req.RequireApproval {
		if asked[n] {
			return nil, fault.Reject(fault.CodeInvalidArgument, "require_approval names %q, which is not a server tool this execution may call", core.Clip(n, core.QuotedBytes))
		}
	}
	return out, nil
}

// LoadModule compiles a WebAssembly module (or finds it in the cache) so
// that requests and resumes can name it by its SHA-256, which it returns.
func (e *Executor) LoadModule(ctx context.Context, module []byte) (string, *fault.Error) {
	l, ok := e.engines[core.LanguageWASM].(lazyWASM)
	if !ok {
		return "", fault.Reject(fault.CodeUnimplemented, "WebAssembly is not enabled")
	}
	if max := e.maxSource * wasmModuleFactor; len(module) > max {
		return "", fault.Reject(fault.CodeInvalidArgument, "the module is %d bytes, more than the %d allowed", len(module), max)
	}
	var h string
	if pool := e.wasmWorkers(); pool != nil {
		var err error
		if h, err = pool.CompileModule(ctx, module); err != nil {
			return "", compileFault("", err)
		}
	} else {
		me, err := l.engine()
		if err != nil {
			return "", fault.Reject(fault.CodeUnavailable, "the WebAssembly engine is unavailable: %v", err)
		}
		if h, err = me.Compile(ctx, module); err != nil {
			return "", compileFault("", err)
		}
	}
	// The module is the untenanted caller's (a Runner's requests have no
	// tenant).
	e.rememberSent("", h)
	return h, nil
}

// compileFault classifies a module the engine did not compile: invalid
// (INVALID_ARGUMENT), over the compile limits (RESOURCE_EXHAUSTED), its
// caller gone (CANCELLED or DEADLINE_EXCEEDED), or the engine unable
// (UNAVAILABLE).
func compileFault(prefix string, err error) *fault.Error {
	switch {
	case errors.Is(err, wasm.ErrInvalidModule):
		return fault.Reject(fault.CodeInvalidArgument, "%s%v", prefix, err)
	case errors.Is(err, wasm.ErrCompileLimit):
		return fault.Reject(fault.CodeResourceExhausted, "%s%v", prefix, err)
	case errors.Is(err, context.Canceled):
		return fault.Reject(fault.CodeCanceled, "%sthe request was cancelled while its module was compiled", prefix)
	case errors.Is(err, context.DeadlineExceeded):
		return fault.Reject(fault.CodeDeadlineExceeded, "%sthe request's deadline passed while its module was compiled", prefix)
	}
	return fault.Reject(fault.CodeUnavailable, "%s%v", prefix, err)
}
