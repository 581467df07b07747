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
// or dial a ptcd server with a Client (or speak its gRPC contract, package
// proto/ptc/v1). Runner and Client take the same Request, return the same
// Result and report a request that did not run as the same *Error. Tools
// are defined with package tools.
//
// The package's types are its own: internally ptc has one request model
// (internal/core), converted to and from these types in one file.
package ptc

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ptcrun/ptc/internal/core"
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
	LanguagePython      Language = 4
)

// String returns the language's name: "javascript", "typescript", "wasm",
// "python" ("unspecified" for the zero value).
func (l Language) String() string { return core.Language(l).String() }

// Limits bounds one execution. A zero field takes the default of the
// runner (or server); a field above its ceiling is clamped to it.
// Result.EffectiveLimits reports the limits that applied.
type Limits struct {
	// Timeout is the wall-clock budget of the execution, tool waits
	// included (time paused for the caller excluded). Breach: KindTimeout.
	Timeout time.Duration
	// CPUTime is the time the sandbox itself may compute. Breach:
	// KindCPULimit.
	CPUTime time.Duration
	// MemoryBytes is the memory the sandbox may hold. Breach:
	// KindMemoryLimit.
	MemoryBytes int64
	// MaxToolCalls is the number of tool calls an execution may make,
	// refused ones included; a call beyond it is rejected with a
	// ToolCallLimitError the script may catch (uncaught:
	// KindToolCallLimit).
	MaxToolCalls int32
	// MaxConcurrentToolCalls bounds the calls in flight at once; more
	// wait, they never fail for it.
	MaxConcurrentToolCalls int32
	// MaxOutputBytes bounds the size of the result JSON. Breach:
	// KindOutputLimit.
	MaxOutputBytes int64
	// MaxLogBytes bounds the captured console output; every entry costs
	// 16 bytes besides its text. Output beyond it is dropped and
	// Result.LogsTruncated set.
	MaxLogBytes int64
	// MaxLogEntries bounds the number of captured console entries; the
	// rest are dropped and Result.LogsTruncated set.
	MaxLogEntries int32
	// MaxResultTokens bounds the approximate model tokens of the result
	// JSON, counted as ToolList.ApproxTokens is. Breach: KindOutputLimit,
	// or truncation with Request.TruncateResult.
	MaxResultTokens int32
	// MaxPauses bounds how often a resumable execution (Request.Resumable)
	// may pause for its caller. Breach: KindPauseLimit.
	MaxPauses int32
	// MaxPausedTime bounds the total time a resumable execution may wait
	// paused, across its pauses (paused time is not part of Timeout).
	// Breach: KindPauseLimit, when it is resumed.
	MaxPausedTime time.Duration
}

// Request is one execution request.
type Request struct {
	// ExecutionID identifies the execution in logs, traces and tool-call
	// idempotency keys; one is generated when empty. At most 128 bytes of
	// ASCII letters, digits and "._:-".
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
	// client tools), whatever AllowedTools says; a Client sends it to the
	// server (ExecuteRequest.no_server_tools).
	NoServerTools bool
	// ClientTools are tools served by the caller for this execution only
	// (their names must not collide with allowed server tools).
	ClientTools []tools.Tool
	// ResultSchema, when set, is a JSON Schema the result must match.
	ResultSchema json.RawMessage
	// IncludeToolResults keeps each call's result in the trace, up to
	// 32 MiB of results in all; a result past that is kept as the stub
	// {"$truncated":true,"bytes":N,"sha256":"…"}, as large arguments are.
	IncludeToolResults bool
	// OnLog, when set, receives console output as it is written.
	OnLog func(LogEntry)
	// OnProgress, when set, receives an event as each tool call starts
	// and as it finishes, server and client tools alike, in-process on
	// the goroutine making or ending the call (return quickly), from a
	// Client as the server streams them. Events carry sizes, codes and
	// durations; ProgressValues adds the arguments, results and error
	// messages.
	OnProgress func(ProgressEvent)
	// ProgressValues makes progress events carry values.
	ProgressValues bool
	// TruncateResult chooses the overflow policy "truncate": a result
	// over MaxOutputBytes or MaxResultTokens is cut structurally until it
	// fits, staying valid JSON (arrays keep their first items and end with
	// "[truncated: N more items]", objects their first keys with a
	// "[truncated]" key, strings their beginning with "…[truncated: N more
	// bytes]"), and Stats and ModelMessage say so. A result whose smallest
	// truncated form does not fit still fails with KindOutputLimit.
	TruncateResult bool
	// Deterministic makes the execution reproducible: Math.random is
	// seeded with Seed (derived from the execution id when zero) and Date
	// reads a virtual clock that starts at ClockStart (the Unix epoch when
	// zero) and advances 1 ms per reading.
	Deterministic bool
	// Seed seeds Math.random when Deterministic is set.
	Seed uint64
	// ClockStart is where the virtual clock starts when Deterministic is set.
	ClockStart time.Time
	// Resumable lets the execution pause at calls only the caller can
	// answer — calls to ClientTools (whose Handler may then be nil) and
	// calls that need approval — instead of running or failing them: the
	// Result then has Pending actions and a Continuation, and Resume (of
	// the Runner or Client, on any process that shares the continuation
	// keys) goes on with the answers. Calls started together pause
	// together; server tools keep running until the script waits only for
	// the caller. A resumable execution is re-run to resume it, so it is
	// always deterministic (Seed; the virtual clock starts at ClockStart,
	// or at the time it starts). Client.Run refuses it.
	Resumable bool
	// RequireApproval names server tools whose calls the caller wants to
	// approve, besides those the server requires approval for
	// (tools.Definition.RequiresApproval, or the server's configuration).
	RequireApproval []string
	// Approve decides, while the script runs, the calls that need
	// approval: approved (the tool runs) or denied with a reason (the
	// script gets a ToolError with code "denied" and the reason, and the
	// tool does not run). It applies to Runner.Execute and Client.Run
	// without Resumable; a resumable execution pauses for approvals
	// instead. Without it those calls are denied.
	Approve func(ctx context.Context, a Action) (approved bool, reason string)
}

// Action is one call a paused execution waits for (Result.Pending), or
// one an Approve callback decides.
type Action struct {
	// CallID names the call in its Answer.
	CallID string
	// Approval is set when the call waits for approval of a server tool
	// (answer it with Approve, and it runs once, or Deny with a Reason);
	// otherwise it is a call to a client tool (answer it with its Output
	// or its Error).
	Approval bool
	// Seq is the call's 1-based number among the execution's calls.
	Seq int32
	// Tool is the tool called: a client tool, or the server tool that
	// runs if approved.
	Tool string
	// Arguments is the call's JSON arguments, validated against the
	// tool's input schema.
	Arguments json.RawMessage
	// IdempotencyKey is "<execution id>/<seq>", the same on every resume.
	IdempotencyKey string
	// Reason says why a call needs approval.
	Reason string
	// Traceparent and Tracestate are the W3C trace context of the call's
	// "execute_tool" span on the server (the traceparent and tracestate
	// header values), so that the work of serving or deciding the call can
	// be traced as its child; empty when the server records no span for
	// the call (tracing off, or the trace not sampled). OpenTelemetry's
	// propagation.TraceContext{}.Extract, given a MapCarrier of the two
	// under their header names, puts them into a context.
	Traceparent, Tracestate string
}

// Answer answers one pending Action in Resume: exactly one of Output and
// Error (for a client tool), or of Approve and Deny (for an approval).
type Answer struct {
	// CallID is the Action's CallID.
	CallID string
	// Output is the client tool's JSON result, checked against its output
	// schema.
	Output json.RawMessage
	// Error is the client tool's failure (its Code is required).
	Error *tools.Error
	// Approve lets the call run; Deny refuses it with Reason, which the
	// script sees as the message of a ToolError with code "denied".
	Approve, Deny bool
	Reason        string
}

// Result is the outcome of an execution that ran, successfully or not.
type Result struct {
	// ExecutionID identifies the execution.
	ExecutionID string
	// Result is the JSON result on success.
	Result json.RawMessage
	// Error is the classified failure, nil on success (KindOf(res.Error)
	// is then 0).
	Error *ExecutionError
	// ModelMessage is what a harness should show the model: the result
	// JSON, or one short paragraph saying what failed and what to change.
	ModelMessage string
	// Logs is the console output, in order, within the log limits.
	Logs []LogEntry
	// LogsTruncated reports that console output was dropped at the cap.
	LogsTruncated bool
	// Stats measure the execution.
	Stats Stats
	// Trace records every tool call the script made, in order.
	Trace []ToolCallRecord
	// EffectiveLimits are the limits that applied, every field set.
	EffectiveLimits Limits
	// Pending lists the calls a paused resumable execution waits for, by
	// Seq; empty when the execution ended. A paused Result has no Result
	// and no Error; its Logs are those written since the previous pause;
	// its Stats and Trace cover the execution so far (the pending calls
	// are not in the Trace).
	Pending []Action
	// Continuation resumes a paused execution (Runner.Resume,
	// Client.Resume) until ContinuationExpires, once. It is opaque,
	// signed and encrypted, and bound to the caller's tenant.
	Continuation        string
	ContinuationExpires time.Time
}

// RequiresAction reports whether the execution paused: Pending lists what
// it waits for and Continuation resumes it.
func (r *Result) RequiresAction() bool { return len(r.Pending) > 0 }

// Stats measure one execution.
type Stats struct {
	// Duration is the wall time of the execution.
	Duration time.Duration
	// CPUTime is the sandbox's compute time (in-process: the VM's running time).
	CPUTime time.Duration
	// QueueTime is the time spent waiting for admission.
	QueueTime time.Duration
	// PeakMemoryBytes is the peak memory the execution was charged with
	// (see the proto field peak_memory_bytes), 0 when not measured; an
	// execution that ends without MEMORY_LIMIT reports at most its limit.
	PeakMemoryBytes int64
	// ToolCalls is the number of tool calls the script made, rejected
	// ones included.
	ToolCalls int32
	// ToolResultBytes is the JSON bytes the tools delivered into the sandbox.
	ToolResultBytes int64
	// OutputBytes is the size of the result JSON.
	OutputBytes int64
	// LogBytes is the size of the captured console output.
	LogBytes int64
	// ResultTruncated reports that the result was cut to fit the output
	// limits (Request.TruncateResult); OutputBytes is then the truncated
	// size and UntruncatedOutputBytes the size before.
	ResultTruncated        bool
	UntruncatedOutputBytes int64
	// DroppedItems counts the array items and object keys truncation
	// removed; CutStrings the strings it shortened.
	DroppedItems int64
	CutStrings   int64
}

// ProgressEvent reports one tool call of a running script starting
// (Finished false) or finishing (Request.OnProgress).
type ProgressEvent struct {
	// Seq is the call's ToolCallRecord.Seq; Tool the name called.
	Seq  int32
	Tool string
	// Finished is set when the call returned or failed.
	Finished bool
	// StartedAfter is the time from the start of the execution to the
	// call; Duration the time it took, once finished.
	StartedAfter time.Duration
	Duration     time.Duration
	// ArgumentBytes and ResultBytes are the sizes of the JSON arguments
	// and (once finished with "ok") result.
	ArgumentBytes int64
	ResultBytes   int64
	// Outcome is "ok" or the call's error code, once finished.
	Outcome string
	// Dropped counts the events dropped just before this one because the
	// client read them too slowly (Client only).
	Dropped int64
	// Arguments, Result and ErrorMessage are set with
	// Request.ProgressValues.
	Arguments    json.RawMessage
	Result       json.RawMessage
	ErrorMessage string
}

// LogEntry is one line of console output (for WebAssembly, one line of
// stderr).
type LogEntry struct {
	// Level is "log", "info", "warn", "error" or "debug".
	Level string
	// Message is the formatted text.
	Message string
	// At is the time since the execution started.
	At time.Duration
}

// ToolCallRecord is one entry of the audit trace: one tool call.
type ToolCallRecord struct {
	// Seq is the 1-based position of the call among the execution's calls.
	Seq int32
	// Tool is the name the script called.
	Tool string
	// Arguments is the JSON arguments, or for arguments larger than 16 KiB
	// a summary {"$truncated":true,"bytes":N,"sha256":"…"}.
	Arguments json.RawMessage
	// OK is set when the tool returned a result that passed validation.
	OK bool
	// ErrorCode and ErrorMessage describe a failed call: the tool's own
	// code or one of the tools.Code constants.
	ErrorCode    string
	ErrorMessage string
	// StartedAfter is the time from the start of the execution to the call.
	StartedAfter time.Duration
	// Duration covers queueing for a concurrency slot and the handler.
	Duration time.Duration
	// ResultBytes is the size of the result delivered into the sandbox.
	ResultBytes int64
	// Result holds the result JSON when Request.IncludeToolResults is set
	// (a stub when it is past what a trace keeps: Request.IncludeToolResults).
	Result json.RawMessage
}

// ToolQuery selects the tools ListTools describes.
type ToolQuery struct {
	// Query ranks the tools by relevance to this text, most relevant
	// first; empty keeps the order by name.
	Query string
	// Limit is the most tools to return; 0 means no limit.
	Limit int
	// Names restricts the answer to these tools; an unknown name is
	// refused with InvalidArgument.
	Names []string
	// TypeScript asks for TypeScript declarations of the selected tools.
	TypeScript bool
}

// ToolList describes the tools a ToolQuery selected.
type ToolList struct {
	// Tools are the selected tools, most relevant first with a query. A
	// tool's RequiresApproval reports whether its calls need approval for
	// any reason: its definition, or the server's configuration.
	Tools []tools.Definition
	// Scores gives each tool's relevance to the query, in the order of
	// Tools (higher is more relevant; comparable within one answer only);
	// empty without a query.
	Scores []float64
	// TypeScript holds declarations of `input` and the tools, when asked.
	TypeScript string
	// Prompt is a model-facing description of how to write a ptc program
	// with these tools.
	Prompt string
	// ApproxTokens approximates the model tokens of the model-facing text
	// (the prompt, and the TypeScript or the tool descriptions).
	ApproxTokens int
}
