// Package ptc runs programmatic tool calling: a model writes a short
// program instead of one tool call per turn; ptc runs it in a sandbox with
// hard limits, exposes tools to it as JSON-Schema-validated async
// functions, and returns only the final JSON result, with stats and an
// audit trace.
//
// Embed a Runner to execute scripts in-process:
//
//	r, _ := ptc.NewRunner(ptc.WithTools(myTools...))
//	res, err := r.Execute(ctx, ptc.Request{Source: `return await tools.add({a: 1, b: 2})`})
//
// or run the ptcd server and talk to it over gRPC (package proto/ptc/v1).
package ptc

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/runtime"
	"github.com/ptcrun/ptc/tools"
)

// Language is the language of a script. The values match ptc.v1.Language.
type Language int32

// The languages. LanguageUnspecified runs as JavaScript.
const (
	LanguageUnspecified Language = 0
	LanguageJavaScript  Language = 1
	LanguageTypeScript  Language = 2
	LanguageWASM        Language = 3
)

// String returns the language's name.
func (l Language) String() string {
	switch l {
	case LanguageUnspecified:
		return "unspecified"
	case LanguageJavaScript:
		return "javascript"
	case LanguageTypeScript:
		return "typescript"
	case LanguageWASM:
		return "wasm"
	}
	return fmt.Sprintf("language(%d)", int32(l))
}

// Limits bounds one execution; see the fields of limits.Limits. A zero field
// takes the runner's default; a field above the runner's ceiling is clamped.
type Limits = limits.Limits

// Tool is a tool definition bound to its Go handler.
type Tool = tools.Tool

// Definition describes a tool: name, description, input and output schemas.
type Definition = tools.Definition

// Call is one tool invocation as a handler sees it.
type Call = tools.Call

// Handler runs a tool call.
type Handler = tools.Handler

// ToolError is a tool failure with a stable code; return it from a Handler.
type ToolError = tools.Error

// ErrorKind classifies a failed execution. The values match ptc.v1.ErrorKind.
type ErrorKind = fault.Kind

// The error kinds.
const (
	KindSyntax        = fault.KindSyntax
	KindScript        = fault.KindScript
	KindTimeout       = fault.KindTimeout
	KindCPULimit      = fault.KindCPULimit
	KindMemoryLimit   = fault.KindMemoryLimit
	KindToolCallLimit = fault.KindToolCallLimit
	KindOutputLimit   = fault.KindOutputLimit
	KindResultSchema  = fault.KindResultSchema
	KindCancelled     = fault.KindCancelled
	KindInternal      = fault.KindInternal
)

// Error is why an execution failed. Line and Column are 1-based positions
// in the caller's source, zero when unknown.
type Error = fault.Error

// LogEntry is one line of console output.
type LogEntry = runtime.LogEntry

// ToolCallRecord is one entry of the audit trace.
type ToolCallRecord = bridge.Record

// Request is one execution request.
type Request struct {
	// ExecutionID identifies the execution; one is generated when empty.
	ExecutionID string
	// Language of Source (or LanguageWASM for Module).
	Language Language
	// Source is the script: the body of an async function.
	Source string
	// Module is a WebAssembly module (LanguageWASM).
	Module []byte
	// ModuleSHA256 names a module the runner already holds (LanguageWASM).
	ModuleSHA256 string
	// Input is the JSON value bound to `input`; empty means null.
	Input json.RawMessage
	// Limits requested; zero fields take the defaults.
	Limits Limits
	// AllowedTools restricts the server tools the script may call; empty
	// means all of them (unless NoServerTools is set).
	AllowedTools []string
	// NoServerTools gives the script no server tools at all (only its
	// client tools), whatever AllowedTools says.
	NoServerTools bool
	// ClientTools are tools served by the caller for this execution only
	// (their names must not collide with allowed server tools).
	ClientTools []Tool
	// ResultSchema, when set, is a JSON Schema the result must match.
	ResultSchema json.RawMessage
	// IncludeToolResults keeps each call's result in the trace.
	IncludeToolResults bool
	// OnLog, when set, receives console output as it is written.
	OnLog func(LogEntry)
	// Deterministic makes the execution reproducible: Math.random is
	// seeded with Seed (derived from the execution id when zero) and Date
	// reads a virtual clock that starts at ClockStart (the Unix epoch when
	// zero) and advances 1 ms per reading.
	Deterministic bool
	Seed          uint64
	ClockStart    time.Time
}

// Stats measure one execution.
type Stats struct {
	// Duration is the wall time of the execution.
	Duration time.Duration
	// CPUTime is the sandbox's compute time (in-process: the VM's running time).
	CPUTime time.Duration
	// QueueTime is the time spent waiting for admission.
	QueueTime time.Duration
	// PeakMemoryBytes is the sandbox's peak memory, 0 when not measured.
	PeakMemoryBytes int64
	// ToolCalls is the number of tool calls started.
	ToolCalls int32
	// ToolResultBytes is the JSON bytes the tools delivered into the sandbox.
	ToolResultBytes int64
	// OutputBytes is the size of the result JSON.
	OutputBytes int64
	// LogBytes is the size of the captured console output.
	LogBytes int64
}

// Result is the outcome of an execution that ran (successfully or not).
type Result struct {
	ExecutionID string
	// Result is the JSON result on success.
	Result json.RawMessage
	// Error is the classified failure, nil on success.
	Error *Error
	// ModelMessage is what a harness should show the model: the result
	// JSON, or one short paragraph saying what failed and what to change.
	ModelMessage string
	Logs         []LogEntry
	// LogsTruncated reports that console output was dropped at the cap.
	LogsTruncated   bool
	Stats           Stats
	Trace           []ToolCallRecord
	EffectiveLimits Limits
}

// RequestCode classifies a request that could not be run at all. The names
// follow gRPC status codes.
type RequestCode int

// The request codes.
const (
	InvalidArgument RequestCode = iota + 1
	Unimplemented
	ResourceExhausted
	FailedPrecondition
	PermissionDenied
	Unavailable
)

// String returns the code's name.
func (c RequestCode) String() string {
	switch c {
	case InvalidArgument:
		return "INVALID_ARGUMENT"
	case Unimplemented:
		return "UNIMPLEMENTED"
	case ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case FailedPrecondition:
		return "FAILED_PRECONDITION"
	case PermissionDenied:
		return "PERMISSION_DENIED"
	case Unavailable:
		return "UNAVAILABLE"
	}
	return fmt.Sprintf("CODE_%d", int(c))
}

// RequestError is returned by Execute for a request that was not run.
type RequestError struct {
	Code    RequestCode
	Message string
}

// Error implements the error interface.
func (e *RequestError) Error() string { return e.Code.String() + ": " + e.Message }

func requestErr(code RequestCode, format string, args ...any) *RequestError {
	return &RequestError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the RequestCode of err, or 0 if err is not a *RequestError.
func CodeOf(err error) RequestCode {
	var re *RequestError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}
