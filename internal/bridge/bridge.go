package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsonval"
	"github.com/ptcrun/ptc/tools"
)

// Caller is everything a script can reach of its tools, declared: the tool
// manifest (the names, and which tools may run on the script's goroutine),
// the calls, and discovery (tools.$search and tools.$describe). Every
// implementation provides all of it — the Dispatcher in-process, the call
// proxy in a worker process — so no capability depends on where a script
// runs. Methods may be invoked from many goroutines at once.
type Caller interface {
	// Names returns the callable tool names, sorted.
	Names() []string
	// Inline reports whether the named tool may run on the script's own
	// goroutine when the script waits for nothing else (tools.Tool.Inline).
	Inline(name string) bool
	// Start checks and registers one call synchronously — so calls are
	// numbered in the order the script makes them — and returns the
	// Invocation that performs it. The Invocation may block and may run
	// on any goroutine; it must be called exactly once.
	Start(ctx context.Context, name string, args json.RawMessage) Invocation
	// StartNow is Start for a goroutine that must not wait for a
	// concurrency slot (a worker's frame reader, which runs inline tools
	// where it reads their calls): now reports that the Invocation runs
	// without waiting — the call was refused, or a slot was free and the
	// Invocation holds it. Otherwise the Invocation waits for a slot like
	// Start's, and belongs on a goroutine of its own.
	StartNow(ctx context.Context, name string, args json.RawMessage) (inv Invocation, now bool)
	// Call is Start followed by its Invocation.
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
	// Search ranks the callable tools by relevance to query (at most
	// limit, at most MaxSearchResults).
	Search(query string, limit int) []SearchHit
	// Describe returns one callable tool's definition and TypeScript
	// declaration.
	Describe(name string) (Description, bool)
}

// Invocation performs a started call and returns its JSON result or a
// *CallError.
type Invocation func() (json.RawMessage, error)

// Awaiter is implemented by a Caller whose calls are answered by
// messages it receives — a worker's call proxy, whose calls run in the
// supervisor — rather than by running Invocations. An engine then waits
// for the answers itself, on the script's own goroutine and for any of
// its calls at once: no goroutine per call and no hand-off between
// threads, which cost more than the call itself when the answer crosses a
// process boundary. It is how an engine waits, not something a script can
// see: every Caller works without it.
type Awaiter interface {
	// Begin starts a call as Start does (numbered in the order of Begin
	// calls) and returns its ticket, never 0; the call's answer comes
	// from Await. A call to an inline tool may be held back until the
	// next Await, so that calls made together go out together.
	Begin(ctx context.Context, name string, args json.RawMessage) (ticket uint32)
	// Await sends what Begin held back, then waits for the answer to any
	// call begun and not yet answered, in the order the answers arrive:
	// its ticket, and its JSON result or *CallError. When ctx ends first
	// it returns ticket 0 and ctx's error; answers to calls never awaited
	// are dropped.
	Await(ctx context.Context) (ticket uint32, result json.RawMessage, err error)
}

func failed(err error) Invocation {
	return func() (json.RawMessage, error) { return nil, err }
}

// Error names, as seen by scripts in err.name.
const (
	// NameArgumentError is the name of errors about a call's arguments.
	NameArgumentError = "ToolArgumentError"
	// NameToolError is the name of errors raised by or about a tool.
	NameToolError = "ToolError"
	// NameCallLimitError is the name of the error a call over budget gets.
	NameCallLimitError = "ToolCallLimitError"
)

// CallError is a failed tool call as scripts see it: a rejected promise
// holding {name, tool, code, message, errors}. Its codes are the tools.Code
// constants or a handler's own.
type CallError struct {
	// Name is NameArgumentError, NameToolError or NameCallLimitError.
	Name    string
	Tool    string
	Code    string
	Message string
	// Errors lists schema violations for argument and output errors.
	Errors []tools.Violation
	// Limit and Observed are set for a call refused for the call budget:
	// the budget, and the number of the refused call.
	Limit, Observed int64
}

// Error implements the error interface.
func (e *CallError) Error() string {
	return fmt.Sprintf("%s: %s (tool %q, code %s)", e.Name, e.Message, e.Tool, e.Code)
}

// Kind returns the execution failure kind an uncaught e should produce.
func (e *CallError) Kind() fault.Kind {
	if e.Code == tools.CodeCallLimit && e.Name == NameCallLimitError {
		return fault.KindToolCallLimit
	}
	return fault.KindScript
}

// Bounds that protect the service from one execution's calls.
const (
	// MaxArgumentBytes bounds one call's JSON arguments.
	MaxArgumentBytes = 4 << 20
	// MaxArgumentBytesInAll bounds the JSON arguments of one execution's
	// calls in all: the server reads and checks every call's arguments on
	// its own CPU, which the execution's cpu_time does not count (500
	// calls of 4 MiB took 15.6 s of it). A call past it is refused
	// invalid_arguments.
	MaxArgumentBytesInAll = 64 << 20
	// MaxResultBytes bounds one call's JSON result.
	MaxResultBytes = 64 << 20
	// MaxTracedArgumentBytes bounds the arguments kept in one trace record;
	// larger ones are recorded as {"$truncated":true,"bytes":N,"sha256":"…"}.
	MaxTracedArgumentBytes = 16 << 10
	// MaxTracedArgumentsBytes bounds the arguments one execution's trace
	// keeps in all: past it, each call's arguments are recorded as the
	// stub MaxTracedArgumentBytes describes, whatever their size (100,000
	// calls of 16 KiB would otherwise hold 1.6 GB in the server).
	MaxTracedArgumentsBytes = 8 << 20
	// MaxKeptResultBytes bounds the tool results one execution's trace
	// keeps in all (Config.KeepResults): a result past it is recorded as
	// the stub MaxTracedArgumentBytes describes, so that the response
	// carrying the trace stays within a server's message size.
	MaxKeptResultBytes = 32 << 20
	// MaxRefusedRecords bounds the trace records of calls refused after
	// the call budget is used up: further refused calls are counted in
	// Calls but not recorded, so a script that catches ToolCallLimitError
	// in a loop cannot grow the trace without bound.
	MaxRefusedRecords = 64
	// MaxSearchResults bounds what one Search returns.
	MaxSearchResults = 50
)

// Config configures a Dispatcher.
type Config struct {
	// ExecutionID is passed to handlers and forms idempotency keys.
	ExecutionID string
	// Tools are the tools the execution may call.
	Tools []*tools.Compiled
	// MaxCalls is the call budget: every call counts, refused ones
	// included; 0 means no budget.
	MaxCalls int32
	// MaxConcurrent bounds calls in flight; 0 means 1.
	MaxConcurrent int32
	// Start is the execution's start time, for StartedAfter.
	Start time.Time
	// KeepResults stores each call's result JSON in the trace, up to
	// MaxKeptResultBytes in all.
	KeepResults bool
	// Observer, when set, watches every call that is recorded in the trace
	// (see core.CallObserver): live progress, tracing. Calls a resumed
	// execution's re-run answers from its journal are not observed again.
	Observer core.CallObserver
	// TraceContext, when set, returns the W3C trace context (traceparent,
	// tracestate) of a call's span from the context Observer returned for
	// it, or empty strings when no span is recorded; the Actions the
	// dispatcher makes (calls waiting for their caller, approval requests)
	// carry it.
	TraceContext func(ctx context.Context) (traceparent, tracestate string)
	// Approvals names the tools whose calls need approval, each with the
	// reason; Approve decides them (without it they are denied).
	Approvals map[string]string
	Approve   core.Approver

	// Resumable makes the execution resumable (see durable.go): calls to
	// ClientTools, and calls that need approval while Approve is nil, wait
	// for the caller, and the execution pauses (OnPause) once everything
	// it waits for waits for the caller. Engines must report idleness
	// (Dispatcher.Idle).
	Resumable   bool
	ClientTools []string
	// Journal, for a resumed execution, is what the paused run delivered;
	// Answers answer its pending calls, by seq (validated by the caller).
	Journal core.Journal
	Answers map[int32]core.Answer
	// OnPause is called once when the execution pauses or its re-run
	// diverges; it must stop the engine, or leave it idle until Resume.
	// OnReplayed is called once a re-run reaches the pause point: what the
	// script does from then on is new.
	OnPause, OnReplayed func()
}

// Dispatcher runs the tool calls of one execution. It is safe for
// concurrent use.
type Dispatcher struct {
	cfg   Config
	tools map[string]*tools.Compiled
	names []string
	sem   chan struct{}

	desc describer

	// dur is the state of a resumable execution, nil otherwise.
	dur *durable

	mu sync.Mutex
	// calls numbers every call the script made; refused counts those
	// refused for the budget.
	calls       int32
	refused     int32
	resultBytes int64
	trace       []core.Record
	// keptBytes counts the results the trace keeps (KeepResults),
	// argBytes the arguments it keeps, argBytesInAll the arguments of
	// every call checked.
	keptBytes, argBytes, argBytesInAll int64
	// hashedBytes counts the arguments the trace's stubs hashed.
	hashedBytes int64
}

// New returns a Dispatcher for one execution.
func New(cfg Config) *Dispatcher {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 1
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	d := &Dispatcher{
		cfg:   cfg,
		tools: make(map[string]*tools.Compiled, len(cfg.Tools)),
		sem:   make(chan struct{}, cfg.MaxConcurrent),
	}
	for _, t := range cfg.Tools {
		d.tools[t.Name] = t
		d.names = append(d.names, t.Name)
	}
	sort.Strings(d.names)
	if cfg.Resumable {
		d.dur = newDurable(d)
	}
	return d
}

// Names returns the callable tool names, sorted.
func (d *Dispatcher) Names() []string { return d.names }

// Inline reports whether the named tool may run on the script's
// goroutine; never in a resumable execution, whose every completion goes
// through the gate.
func (d *Dispatcher) Inline(name string) bool {
	t, ok := d.tools[name]
	return ok && t.Inline && d.dur == nil
}

// Call runs one tool call through every check of the bridge.
func (d *Dispatcher) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return d.Start(ctx, name, args)()
}

// Start numbers the call, records it in the trace and checks the call
// budget, the name and the arguments — every call the script makes is
// counted and traced, refused ones included (past the budget, at most
// MaxRefusedRecords of them are recorded); the returned Invocation asks
// for approval when the tool needs it, waits for a concurrency slot, runs
// the handler and checks the output.
func (d *Dispatcher) Start(ctx context.Context, name string, args json.RawMessage) Invocation {
	inv, _ := d.start(ctx, name, args, false)
	return inv
}

// StartNow is Start that takes a free concurrency slot for the call
// without waiting: now is true when the call was refused or holds a slot.
// A call that needs approval, or any call of a resumable execution, never
// runs now.
func (d *Dispatcher) StartNow(ctx context.Context, name string, args json.RawMessage) (Invocation, bool) {
	return d.start(ctx, name, args, true)
}

// start is Start; with try, it takes a concurrency slot if one is free
// and reports whether the Invocation runs without waiting.
func (d *Dispatcher) start(ctx context.Context, name string, args json.RawMessage, try bool) (Invocation, bool) {
	if len(name) > tools.MaxNameLength {
		// No tool has such a name; cut, it stays unknown, and the trace,
		// the progress and the error do not each copy what a script made.
		name = core.Clip(name, tools.MaxNameLength)
	}
	if d.dur != nil {
		return d.dur.start(ctx, name, args), false
	}
	b := d.begin(ctx, name, args, true)
	if b.err != nil {
		d.finish(b.ctx, b.ev, b.idx, b.start, nil, b.err)
		return failed(b.err), true
	}
	t, args, err := d.check(name, args)
	if err != nil {
		d.finish(b.ctx, b.ev, b.idx, b.start, nil, err)
		return failed(err), true
	}
	held := false
	if _, approval := d.cfg.Approvals[t.Name]; try && !approval {
		select {
		case d.sem <- struct{}{}:
			held = true
		default:
		}
	}
	return func() (json.RawMessage, error) {
		out, err := d.invoke(b.ctx, t, b.seq, b.key, args, held)
		d.finish(b.ctx, b.ev, b.idx, b.start, out, err)
		return out, err
	}, held
}

// begun is a call that was numbered and traced: its seq, its trace index
// (-1 when not recorded), when it started, its observer's context and
// event, and the budget's refusal.
type begun struct {
	seq   int32
	idx   int
	start time.Time
	ctx   context.Context
	ev    *core.CallEvent
	key   string
	err   *CallError
}

// begin numbers a call, records it in the trace, tells the observer (when
// observe is set) and checks the call budget.
func (d *Dispatcher) begin(ctx context.Context, name string, args json.RawMessage, observe bool) begun {
	start := time.Now()
	d.mu.Lock()
	if d.calls == math.MaxInt32 {
		d.mu.Unlock()
		return begun{idx: -1, start: start, ctx: ctx, err: &CallError{Name: NameCallLimitError, Tool: name, Code: tools.CodeCallLimit,
			Message: "the execution made more tool calls than can be counted"}}
	}
	d.calls++
	seq := d.calls
	over := d.cfg.MaxCalls > 0 && seq > d.cfg.MaxCalls
	idx := -1
	if !over || d.refused < MaxRefusedRecords {
		idx = len(d.trace)
		d.trace = append(d.trace, core.Record{Seq: seq, Tool: name, Arguments: d.traceArgs(args), StartedAfter: start.Sub(d.cfg.Start)})
	}
	if over {
		d.refused++
	}
	d.mu.Unlock()
	b := begun{seq: seq, idx: idx, start: start, ctx: ctx}
	if observe {
		d.observe(&b, name, args)
	}
	if over {
		b.err = &CallError{Name: NameCallLimitError, Tool: name, Code: tools.CodeCallLimit,
			Message: fmt.Sprintf("tool call limit of %d calls reached; make fewer calls (batch work, or stop earlier)", d.cfg.MaxCalls),
			Limit:   int64(d.cfg.MaxCalls), Observed: int64(seq)}
	}
	return b
}

// observe tells the observer that a begun call started.
func (d *Dispatcher) observe(b *begun, name string, args json.RawMessage) {
	if d.cfg.Observer == nil || b.idx < 0 {
		return
	}
	b.key = d.idempotencyKey(b.seq)
	b.ev = &core.CallEvent{ExecutionID: d.cfg.ExecutionID, Seq: b.seq, Tool: name, IdempotencyKey: b.key,
		StartedAfter: b.start.Sub(d.cfg.Start), Arguments: args}
	b.ctx = d.cfg.Observer.CallStarted(b.ctx, b.ev)
}

// check finds the tool and validates the arguments.
func (d *Dispatcher) check(name string, args json.RawMessage) (*tools.Compiled, json.RawMessage, *CallError) {
	t, ok := d.tools[name]
	if !ok {
		return nil, nil, &CallError{Name: NameToolError, Tool: name, Code: tools.CodeUnknownTool,
			Message: fmt.Sprintf("unknown tool %q; available tools: %s", name, listNames(d.names))}
	}
	if len(args) <= MaxArgumentBytes {
		d.mu.Lock()
		over := d.argBytesInAll+int64(len(args)) > MaxArgumentBytesInAll
		if !over {
			d.argBytesInAll += int64(len(args))
		}
		d.mu.Unlock()
		if over {
			return nil, nil, &CallError{Name: NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
				Message: fmt.Sprintf("the execution's calls have passed %d bytes of arguments in all, the most allowed; this call's %d bytes would go past it", MaxArgumentBytesInAll, len(args))}
		}
	}
	args, err := checkArgs(t, args)
	if err != nil {
		return nil, nil, err
	}
	return t, args, nil
}

// invoke asks for approval when the tool needs it, then runs the call. A
// call that needs approval takes its concurrency slot before it is put to
// the approver and keeps it while it runs: the calls waiting for a
// decision count against MaxConcurrent, so a script that starts thousands
// of them at once has at most MaxConcurrent questions outstanding and the
// rest wait their turn (each question carries the call's arguments).
func (d *Dispatcher) invoke(ctx context.Context, t *tools.Compiled, seq int32, key string, args json.RawMessage, held bool) (json.RawMessage, error) {
	if reason, ok := d.cfg.Approvals[t.Name]; ok {
		if !held {
			select {
			case d.sem <- struct{}{}:
				held = true
			case <-ctx.Done():
				return nil, ctxError(t.Name, ctx)
			}
		}
		if err := d.approve(ctx, t.Name, seq, args, reason); err != nil {
			<-d.sem
			return nil, err
		}
	}
	return d.run(ctx, t, seq, key, args, held)
}

// approve asks the execution's approver about one call; without one the
// call is denied.
func (d *Dispatcher) approve(ctx context.Context, name string, seq int32, args json.RawMessage, reason string) error {
	if d.cfg.Approve == nil {
		return &CallError{Name: NameToolError, Tool: name, Code: tools.CodeDenied,
			Message: fmt.Sprintf("%s needs approval (%s) and this execution has no way to ask for it: run it resumable, over a Session, or with an approval callback", name, reason)}
	}
	ok, why := d.cfg.Approve(ctx, d.traced(ctx, d.action(core.ActionApproval, name, seq, args, reason)))
	if ctx.Err() != nil {
		return ctxError(name, ctx)
	}
	if !ok {
		return denied(name, why)
	}
	return nil
}

// denied is the error of a call whose approval was denied for reason.
func denied(name, reason string) *CallError {
	if reason == "" {
		reason = "the call was denied"
	}
	return &CallError{Name: NameToolError, Tool: name, Code: tools.CodeDenied, Message: reason}
}

// action describes a call that waits for its caller.
func (d *Dispatcher) action(kind core.ActionKind, name string, seq int32, args json.RawMessage, reason string) core.Action {
	return core.Action{CallID: core.CallID(seq), Kind: kind, Seq: seq, Tool: name, Arguments: args,
		IdempotencyKey: d.idempotencyKey(seq), Reason: reason}
}

// traced is a with the trace context of the call's span in ctx.
func (d *Dispatcher) traced(ctx context.Context, a core.Action) core.Action {
	if d.cfg.TraceContext != nil {
		a.Traceparent, a.Tracestate = d.cfg.TraceContext(ctx)
	}
	return a
}

// finish completes the call's trace record and, with an observer, its
// event.
func (d *Dispatcher) finish(ctx context.Context, ev *core.CallEvent, idx int, start time.Time, out json.RawMessage, err error) {
	took := time.Since(start)
	var ce *CallError
	if err != nil {
		// Every failure is classified: one that is not a CallError
		// already gets the code the script sees for it.
		ce = callErrorOf("", err)
	}
	d.mu.Lock()
	if err == nil {
		d.resultBytes += int64(len(out))
	}
	if idx >= 0 {
		rec := &d.trace[idx]
		rec.Duration = took
		switch {
		case err == nil:
			rec.OK = true
			rec.ResultBytes = int64(len(out))
			if d.cfg.KeepResults {
				if d.keptBytes+int64(len(out)) <= MaxKeptResultBytes {
					rec.Result = out
					d.keptBytes += int64(len(out))
				} else {
					rec.Result = core.StubJSON(out, 0)
				}
			}
		case ce != nil:
			rec.ErrorCode, rec.ErrorMessage = ce.Code, ce.Message
		}
	}
	d.mu.Unlock()
	if ev == nil {
		return
	}
	ev.Finished, ev.Duration = true, took
	switch {
	case err == nil:
		ev.OK, ev.Result = true, out
	case ce != nil:
		ev.ErrorCode, ev.ErrorMessage = ce.Code, ce.Message
	}
	d.cfg.Observer.CallFinished(ctx, ev)
}

// anyObject is the input schema of a tool that declares none (tools.Compile
// gives it this one): any JSON object matches it.
var anyObject = []byte(`{"type":"object"}`)

// replacement is U+FFFD in UTF-8.
var replacement = []byte("\uFFFD")

// plainObject reports whether args, valid UTF-8, is a JSON object that
// jsonval.Decode accepts, without building the value, for the text most
// calls send: no escape and no U+FFFD. Then the grammar (which the
// scanner checks as Decode does, raw control characters in strings
// included) is all Decode checks: its other refusals are bad escapes and
// property names merged by U+FFFD, which such text cannot have. false
// means "not shown": the caller decodes.
func plainObject(args []byte) bool {
	if bytes.IndexByte(args, '\\') >= 0 || bytes.Contains(args, replacement) {
		return false
	}
	s := jsonval.NewScanner(args, jsonval.MaxDepth)
	t, err := s.Next()
	if err != nil || t.Kind != jsonval.BeginObject {
		return false
	}
	for {
		t, err := s.Next()
		if err != nil {
			return false
		}
		if t.Kind == jsonval.End {
			return true
		}
	}
}

// checkArgs bounds and validates a call's arguments.
func checkArgs(t *tools.Compiled, args json.RawMessage) (json.RawMessage, *CallError) {
	name := t.Name
	if len(args) > MaxArgumentBytes {
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
			Message: fmt.Sprintf("arguments are %d bytes, more than the %d allowed", len(args), MaxArgumentBytes)}
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !utf8.Valid(args) {
		// encoding/json would take them and turn the bad bytes into U+FFFD:
		// the tool would see other arguments than the script sent.
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
			Message: "arguments are not valid UTF-8; JSON text must be UTF-8"}
	}
	if bytes.Equal(t.Input.Raw(), anyObject) {
		// The schema asks for an object and nothing more: the decoding
		// Validate would do (which refuses what is not JSON and merged
		// names) is the whole check. What fails it is reported below.
		if plainObject(args) {
			return args, nil
		}
		if v, err := jsonval.Decode(args); err == nil {
			if _, ok := v.(map[string]any); ok {
				return args, nil
			}
		}
	}
	vs, err := t.Input.Validate(args)
	if errors.Is(err, jsonval.ErrMergedNames) {
		// The schema would check one property where the tool gets two.
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
			Message: "arguments have property names that differ only in unpaired surrogates (\\ud800-\\udfff), which a schema cannot tell apart; rename them"}
	}
	if errors.Is(err, tools.ErrCheckTooCostly) {
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
			Message: fmt.Sprintf("arguments could not be checked against the input schema of %s: %v", name, err)}
	}
	if err != nil {
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
			Message: "arguments are not valid JSON"}
	}
	if len(vs) > 0 {
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
			Message: fmt.Sprintf("arguments do not match the input schema of %s: %s", name, tools.FormatViolations(vs)), Errors: vs}
	}
	return args, nil
}

// run performs one call; held means the call already holds a
// concurrency slot.
func (d *Dispatcher) run(ctx context.Context, t *tools.Compiled, seq int32, key string, args json.RawMessage, held bool) (json.RawMessage, error) {
	name := t.Name
	if held {
		if ctx.Err() != nil {
			<-d.sem
			return nil, ctxError(name, ctx)
		}
	} else {
		select {
		case d.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctxError(name, ctx)
		}
	}
	defer func() { <-d.sem }()

	if t.Handler == nil {
		return nil, &CallError{Name: NameToolError, Tool: name, Code: tools.CodeToolFailed, Message: "tool has no handler"}
	}
	call := tools.Call{
		ExecutionID:    d.cfg.ExecutionID,
		Seq:            seq,
		IdempotencyKey: key,
		Tool:           name,
		Arguments:      args,
	}
	if call.IdempotencyKey == "" {
		call.IdempotencyKey = d.idempotencyKey(seq)
	}
	out, err := safeHandle(ctx, t.Handler, call)
	if err != nil {
		return nil, handlerError(ctx, name, err)
	}
	if ctx.Err() != nil {
		return nil, ctxError(name, ctx)
	}
	if len(out) > MaxResultBytes {
		return nil, &CallError{Name: NameToolError, Tool: name, Code: tools.CodeInvalidOutput,
			Message: fmt.Sprintf("tool result is %d bytes, more than the %d allowed", len(out), MaxResultBytes)}
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if t.TrustOutput {
		return out, nil
	}
	if t.Output != nil {
		vs, err := t.Output.ValidateContext(ctx, out)
		if ctx.Err() != nil {
			return nil, ctxError(name, ctx)
		}
		if errors.Is(err, tools.ErrCheckTooCostly) {
			return nil, &CallError{Name: NameToolError, Tool: name, Code: tools.CodeInvalidOutput,
				Message: fmt.Sprintf("tool result could not be checked against the output schema of %s: %v", name, err)}
		}
		if errors.Is(err, jsonval.ErrMergedNames) {
			return nil, &CallError{Name: NameToolError, Tool: name, Code: tools.CodeInvalidOutput,
				Message: "tool returned property names that differ only in unpaired surrogates or invalid UTF-8, which its output schema cannot tell apart"}
		}
		if err != nil {
			return nil, &CallError{Name: NameToolError, Tool: name, Code: tools.CodeInvalidOutput, Message: "tool returned invalid JSON"}
		}
		if len(vs) > 0 {
			return nil, &CallError{Name: NameToolError, Tool: name, Code: tools.CodeInvalidOutput,
				Message: fmt.Sprintf("tool result does not match the output schema of %s: %s", name, tools.FormatViolations(vs)), Errors: vs}
		}
	} else if !json.Valid(out) {
		return nil, &CallError{Name: NameToolError, Tool: name, Code: tools.CodeInvalidOutput, Message: "tool returned invalid JSON"}
	}
	return out, nil
}

// idempotencyKey is the key of call seq: "<execution id>/<seq>".
func (d *Dispatcher) idempotencyKey(seq int32) string {
	return d.cfg.ExecutionID + "/" + strconv.Itoa(int(seq))
}

// safeHandle runs h, turning a panic into an error so that one bad tool
// never takes the service down.
func safeHandle(ctx context.Context, h tools.Handler, call tools.Call) (out json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return h(ctx, call)
}

type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("tool handler panicked: %v", p.value) }

func handlerError(ctx context.Context, name string, err error) *CallError {
	var te *tools.Error
	var ce *CallError
	var pe *panicError
	switch {
	case errors.As(err, &ce):
		ce.Tool = name
		return ce
	case errors.As(err, &te):
		return &CallError{Name: NameToolError, Tool: name, Code: te.Code, Message: te.Message}
	case errors.As(err, &pe):
		return &CallError{Name: NameToolError, Tool: name, Code: tools.CodePanic, Message: "the tool failed unexpectedly"}
	case ctx.Err() != nil:
		return ctxError(name, ctx)
	default:
		return &CallError{Name: NameToolError, Tool: name, Code: tools.CodeToolFailed, Message: err.Error()}
	}
}

func ctxError(name string, ctx context.Context) *CallError {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &CallError{Name: NameToolError, Tool: name, Code: tools.CodeTimeout, Message: "the execution's time ran out during the call"}
	}
	return &CallError{Name: NameToolError, Tool: name, Code: tools.CodeCancelled, Message: "the call was cancelled"}
}

// traceArgs returns what a call's trace record keeps of its arguments:
// a copy, or past MaxTracedArgumentBytes (or once the execution's records
// keep MaxTracedArgumentsBytes in all) a stub. d.mu is held.
func (d *Dispatcher) traceArgs(args json.RawMessage) json.RawMessage {
	if len(args) <= MaxTracedArgumentBytes && d.argBytes+int64(len(args)) <= MaxTracedArgumentsBytes {
		d.argBytes += int64(len(args))
		return append(json.RawMessage(nil), args...)
	}
	// The stub's SHA-256 costs a pass over the arguments: once the
	// execution's stubs have hashed MaxArgumentBytesInAll, they give the
	// size alone (500 stubs of 4 MiB took ptcd 4 s to hash).
	if d.hashedBytes+int64(len(args)) > MaxArgumentBytesInAll {
		return json.RawMessage(fmt.Sprintf(`{"$truncated":true,"bytes":%d}`, len(args)))
	}
	d.hashedBytes += int64(len(args))
	return core.StubJSON(args, -1)
}

// listNames renders tool names for an error message: comma-separated, at
// most 20, then how many more.
func listNames(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	const max = 20
	s := ""
	for i, n := range names {
		if i == max {
			return s + fmt.Sprintf(", … (%d more)", len(names)-max)
		}
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// Calls returns the number of calls the script made, refused ones
// included.
func (d *Dispatcher) Calls() int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// ResultBytes returns the JSON bytes the tools delivered.
func (d *Dispatcher) ResultBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resultBytes
}

// Trace returns a copy of the audit trace, in call order.
func (d *Dispatcher) Trace() []core.Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]core.Record(nil), d.trace...)
}
