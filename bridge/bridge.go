package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// Caller is what an engine needs from the bridge: the names of the tools a
// script may call and a way to call them. Call may be invoked from many
// goroutines at once.
type Caller interface {
	// Names returns the callable tool names, sorted.
	Names() []string
	// Start checks and registers one call synchronously — so calls are
	// numbered in the order the script makes them — and returns the
	// Invocation that performs it. The Invocation may block and may run
	// on any goroutine; it must be called exactly once.
	Start(ctx context.Context, name string, args json.RawMessage) Invocation
	// Call is Start followed by its Invocation.
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// InlineCaller is implemented by callers that know which tools may run on
// the script's own goroutine (see tools.Tool.Inline).
type InlineCaller interface {
	Inline(name string) bool
}

// Invocation performs a started call and returns its JSON result or a
// *CallError.
type Invocation func() (json.RawMessage, error)

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

// Error codes set by the bridge itself (handlers may use their own).
const (
	CodeUnknownTool      = "unknown_tool"
	CodeInvalidArguments = "invalid_arguments"
	CodeCallLimit        = "tool_call_limit"
	CodeToolFailed       = "tool_failed"
	CodeInvalidOutput    = "invalid_output"
	CodeCancelled        = "cancelled"
	CodeTimeout          = "timeout"
	CodePanic            = "tool_panic"
)

// CallError is a failed tool call as scripts see it: a rejected promise
// holding {name, tool, code, message, errors}.
type CallError struct {
	// Name is NameArgumentError, NameToolError or NameCallLimitError.
	Name    string
	Tool    string
	Code    string
	Message string
	// Errors lists schema violations for argument and output errors.
	Errors []tools.Violation
}

// Error implements the error interface.
func (e *CallError) Error() string {
	return fmt.Sprintf("%s: %s (tool %q, code %s)", e.Name, e.Message, e.Tool, e.Code)
}

// Kind returns the execution failure kind an uncaught e should produce.
func (e *CallError) Kind() fault.Kind {
	if e.Code == CodeCallLimit {
		return fault.KindToolCallLimit
	}
	return fault.KindScript
}

// Record is one entry of the audit trace.
type Record struct {
	Seq  int32
	Tool string
	// Arguments is the JSON arguments, or for arguments larger than
	// MaxTracedArgumentBytes a JSON stub {"$truncated":true,"bytes":N,"sha256":"…"}.
	Arguments    json.RawMessage
	OK           bool
	ErrorCode    string
	ErrorMessage string
	// StartedAfter is the time from the start of the execution to the call.
	StartedAfter time.Duration
	// Duration covers queueing for a concurrency slot and the handler.
	Duration    time.Duration
	ResultBytes int64
	// Result holds the result JSON when the dispatcher keeps results.
	Result json.RawMessage
}

// Bounds that protect the service from one execution's calls.
const (
	// MaxArgumentBytes bounds one call's JSON arguments.
	MaxArgumentBytes = 4 << 20
	// MaxResultBytes bounds one call's JSON result.
	MaxResultBytes = 64 << 20
	// MaxTracedArgumentBytes bounds the arguments kept in one trace record.
	MaxTracedArgumentBytes = 16 << 10
)

// Config configures a Dispatcher.
type Config struct {
	// ExecutionID is passed to handlers and forms idempotency keys.
	ExecutionID string
	// Tools are the tools the execution may call.
	Tools []*tools.Compiled
	// MaxCalls is the call budget; 0 means no budget.
	MaxCalls int32
	// MaxConcurrent bounds calls in flight; 0 means 1.
	MaxConcurrent int32
	// Start is the execution's start time, for StartedAfter.
	Start time.Time
	// KeepResults stores each call's result JSON in the trace.
	KeepResults bool
}

// Dispatcher runs the tool calls of one execution. It is safe for
// concurrent use.
type Dispatcher struct {
	cfg   Config
	tools map[string]*tools.Compiled
	names []string
	sem   chan struct{}

	desc describer

	mu          sync.Mutex
	calls       int32
	limitHit    bool
	resultBytes int64
	trace       []Record
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
	return d
}

// Names returns the callable tool names, sorted.
func (d *Dispatcher) Names() []string { return d.names }

// Inline reports whether the named tool may run on the script's goroutine.
func (d *Dispatcher) Inline(name string) bool {
	t, ok := d.tools[name]
	return ok && t.Inline
}

// Call runs one tool call through every check of the bridge.
func (d *Dispatcher) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return d.Start(ctx, name, args)()
}

// Start checks the name, the call budget and the arguments, numbers the
// call and records it in the trace; the returned Invocation waits for a
// concurrency slot, runs the handler and checks the output.
func (d *Dispatcher) Start(ctx context.Context, name string, args json.RawMessage) Invocation {
	start := time.Now()
	t, ok := d.tools[name]
	if !ok {
		return failed(&CallError{Name: NameToolError, Tool: name, Code: CodeUnknownTool,
			Message: fmt.Sprintf("unknown tool %q; available tools: %s", name, ListNames(d.names))})
	}

	d.mu.Lock()
	if d.cfg.MaxCalls > 0 && d.calls >= d.cfg.MaxCalls {
		d.limitHit = true
		d.mu.Unlock()
		return failed(&CallError{Name: NameCallLimitError, Tool: name, Code: CodeCallLimit,
			Message: fmt.Sprintf("tool call limit of %d calls reached; make fewer calls (batch work, or stop earlier)", d.cfg.MaxCalls)})
	}
	d.calls++
	seq := d.calls
	idx := len(d.trace)
	d.trace = append(d.trace, Record{Seq: seq, Tool: name, Arguments: traceArgs(args), StartedAfter: start.Sub(d.cfg.Start)})
	d.mu.Unlock()

	args, err := checkArgs(t, args)
	if err != nil {
		d.finish(idx, start, nil, err)
		return failed(err)
	}
	return func() (json.RawMessage, error) {
		out, err := d.run(ctx, t, seq, args)
		d.finish(idx, start, out, err)
		return out, err
	}
}

func (d *Dispatcher) finish(idx int, start time.Time, out json.RawMessage, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rec := &d.trace[idx]
	rec.Duration = time.Since(start)
	if err != nil {
		var ce *CallError
		if errors.As(err, &ce) {
			rec.ErrorCode, rec.ErrorMessage = ce.Code, ce.Message
		}
		return
	}
	rec.OK = true
	rec.ResultBytes = int64(len(out))
	d.resultBytes += int64(len(out))
	if d.cfg.KeepResults {
		rec.Result = out
	}
}

// checkArgs bounds and validates a call's arguments.
func checkArgs(t *tools.Compiled, args json.RawMessage) (json.RawMessage, error) {
	name := t.Name
	if len(args) > MaxArgumentBytes {
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: CodeInvalidArguments,
			Message: fmt.Sprintf("arguments are %d bytes, more than the %d allowed", len(args), MaxArgumentBytes)}
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	vs, err := t.Input.Validate(args)
	if err != nil {
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: CodeInvalidArguments,
			Message: "arguments are not valid JSON"}
	}
	if len(vs) > 0 {
		return nil, &CallError{Name: NameArgumentError, Tool: name, Code: CodeInvalidArguments,
			Message: fmt.Sprintf("arguments do not match the input schema of %s: %s", name, tools.FormatViolations(vs)), Errors: vs}
	}
	return args, nil
}

func (d *Dispatcher) run(ctx context.Context, t *tools.Compiled, seq int32, args json.RawMessage) (json.RawMessage, error) {
	name := t.Name
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctxError(name, ctx)
	}
	defer func() { <-d.sem }()

	if t.Handler == nil {
		return nil, &CallError{Name: NameToolError, Tool: name, Code: CodeToolFailed, Message: "tool has no handler"}
	}
	call := tools.Call{
		ExecutionID:    d.cfg.ExecutionID,
		Seq:            seq,
		IdempotencyKey: d.cfg.ExecutionID + "/" + strconv.Itoa(int(seq)),
		Tool:           name,
		Arguments:      args,
	}
	out, err := safeHandle(ctx, t.Handler, call)
	if err != nil {
		return nil, handlerError(ctx, name, err)
	}
	if ctx.Err() != nil {
		return nil, ctxError(name, ctx)
	}
	if len(out) > MaxResultBytes {
		return nil, &CallError{Name: NameToolError, Tool: name, Code: CodeInvalidOutput,
			Message: fmt.Sprintf("tool result is %d bytes, more than the %d allowed", len(out), MaxResultBytes)}
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	if t.TrustOutput {
		return out, nil
	}
	if t.Output != nil {
		vs, err := t.Output.Validate(out)
		if err != nil {
			return nil, &CallError{Name: NameToolError, Tool: name, Code: CodeInvalidOutput, Message: "tool returned invalid JSON"}
		}
		if len(vs) > 0 {
			return nil, &CallError{Name: NameToolError, Tool: name, Code: CodeInvalidOutput,
				Message: fmt.Sprintf("tool result does not match the output schema of %s: %s", name, tools.FormatViolations(vs)), Errors: vs}
		}
	} else if !json.Valid(out) {
		return nil, &CallError{Name: NameToolError, Tool: name, Code: CodeInvalidOutput, Message: "tool returned invalid JSON"}
	}
	return out, nil
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
		return &CallError{Name: NameToolError, Tool: name, Code: CodePanic, Message: "the tool failed unexpectedly"}
	case ctx.Err() != nil:
		return ctxError(name, ctx)
	default:
		return &CallError{Name: NameToolError, Tool: name, Code: CodeToolFailed, Message: err.Error()}
	}
}

func ctxError(name string, ctx context.Context) *CallError {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &CallError{Name: NameToolError, Tool: name, Code: CodeTimeout, Message: "the execution's time ran out during the call"}
	}
	return &CallError{Name: NameToolError, Tool: name, Code: CodeCancelled, Message: "the call was cancelled"}
}

func traceArgs(args json.RawMessage) json.RawMessage {
	if len(args) <= MaxTracedArgumentBytes {
		return append(json.RawMessage(nil), args...)
	}
	sum := sha256.Sum256(args)
	return json.RawMessage(fmt.Sprintf(`{"$truncated":true,"bytes":%d,"sha256":%q}`, len(args), hex.EncodeToString(sum[:])))
}

// ListNames renders tool names for an error message: comma-separated, at
// most 20, then how many more.
func ListNames(names []string) string {
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

// Calls returns the number of calls started (those refused for the budget
// excluded).
func (d *Dispatcher) Calls() int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// LimitHit reports whether a call was refused for the call budget.
func (d *Dispatcher) LimitHit() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.limitHit
}

// ResultBytes returns the JSON bytes the tools delivered.
func (d *Dispatcher) ResultBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resultBytes
}

// Trace returns a copy of the audit trace, in call order.
func (d *Dispatcher) Trace() []Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Record(nil), d.trace...)
}
