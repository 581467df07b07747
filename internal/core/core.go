// Package core is ptc's one request model: the Request an execution starts
// from, the Result it ends with, and the pieces both are made of (Script,
// Determinism, LogEntry, Record, Stats). Every layer speaks it: the root
// package converts its public types to it in one file, internal/wire
// converts ptc.v1 messages to and from it, the executor prepares and runs
// it, engines receive its Script and Determinism inside a runtime.Job, the
// worker frames carry the same fields, and cassettes record it.
//
// Package core imports only internal/fault, internal/limits and tools.
package core

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// Language is the language of a script. The values match ptc.v1.Language.
type Language int32

// The languages. LanguageUnspecified runs as JavaScript in the Go API; the
// gRPC contract refuses it.
const (
	LanguageUnspecified Language = 0
	LanguageJavaScript  Language = 1
	LanguageTypeScript  Language = 2
	LanguageWASM        Language = 3
	LanguagePython      Language = 4
)

var languageNames = [...]string{"unspecified", "javascript", "typescript", "wasm", "python"}

// String returns the language's name: "javascript", "typescript", "wasm",
// "python".
func (l Language) String() string {
	if l >= 0 && int(l) < len(languageNames) {
		return languageNames[l]
	}
	return fmt.Sprintf("language(%d)", int32(l))
}

// Valid reports whether l names a language (unspecified excluded).
func (l Language) Valid() bool { return l >= LanguageJavaScript && l <= LanguagePython }

// Or returns l, or def when l is unspecified.
func (l Language) Or(def Language) Language {
	if l == LanguageUnspecified {
		return def
	}
	return l
}

// ParseLanguage parses a language name as String writes it.
func ParseLanguage(s string) (Language, error) {
	for l := LanguageJavaScript; l <= LanguagePython; l++ {
		if s == l.String() {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown language %q: use javascript, typescript, wasm or python", s)
}

// Script is a program: source text for JavaScript and TypeScript, a module
// (or the digest of one the server holds) for WebAssembly.
type Script struct {
	Language Language
	// Source is the program text: the body of an async function.
	Source string
	// Module is a WebAssembly module.
	Module []byte
	// ModuleSHA256 names a module by the hex SHA-256 of its bytes.
	ModuleSHA256 string
}

// Determinism makes an execution reproducible: Math.random (or a guest's
// random source) is seeded with Seed and the clock is virtual, starting at
// ClockStart and advancing 1 ms per reading (runtime.VirtualClockStep). In a
// Request a zero Seed is derived from the execution id and a ClockStart not
// set (ClockStartSet false) is the Unix epoch; in a Job both are resolved.
type Determinism struct {
	Deterministic bool
	Seed          uint64
	ClockStart    time.Time
	// ClockStartSet says ClockStart was given, the zero time (0001-01-01)
	// included: the wire tells a start from none by the field's presence.
	ClockStartSet bool
}

// Request is one execution request, whichever way it arrived.
type Request struct {
	// ExecutionID identifies the execution; one is generated when empty.
	ExecutionID string
	Script
	// Input is the JSON value bound to `input`; empty means null.
	Input json.RawMessage
	// Limits requested; zero fields take the defaults.
	Limits limits.Limits
	// AllowedTools restricts the server tools; empty means all of them
	// (unless NoServerTools is set).
	AllowedTools []string
	// NoServerTools gives the script no server tools at all.
	NoServerTools bool
	// ClientTools are tools served by the caller for this execution only.
	ClientTools []tools.Tool
	// ResultSchema, when set, is a JSON Schema the result must match.
	ResultSchema json.RawMessage
	// IncludeToolResults keeps each call's result in the trace.
	IncludeToolResults bool
	Determinism
	// OnLog, when set, receives each kept log entry as it is written.
	OnLog func(LogEntry)
	// Observer, when set, watches every tool call (live progress).
	Observer CallObserver
	// ProgressValues lets progress sent to a caller carry the calls'
	// arguments, results and error messages (Session's progress_values).
	ProgressValues bool
	// Overflow says what happens to a result over the output limits.
	Overflow OverflowPolicy
	// Resumable lets the execution pause at calls only its caller can
	// answer (ClientTools, approvals): it then ends with Pending actions
	// and a Continuation that Resume takes with the answers.
	Resumable bool
	// RequireApproval names server tools the caller wants to approve
	// itself, on top of those the server requires approval for.
	RequireApproval []string
	// Approve, when set, decides approvals while an execution that is not
	// resumable runs; without it such an execution denies them. A
	// resumable execution pauses for them.
	Approve Approver
	// Tenant is the authenticated caller's tenant ("" without one): a
	// continuation is bound to it.
	Tenant string
}

// LogEntry is one line of console output (or of a module's stderr).
type LogEntry struct {
	// Level is "log", "info", "warn", "error" or "debug".
	Level string
	// Message is the formatted text.
	Message string
	// At is the time since the execution started.
	At time.Duration
}

// Record is one entry of the audit trace: one tool call.
type Record struct {
	Seq  int32
	Tool string
	// Arguments is the JSON arguments (a summary stub when large).
	Arguments    json.RawMessage
	OK           bool
	ErrorCode    string
	ErrorMessage string
	// StartedAfter is the time from the start of the execution to the call.
	StartedAfter time.Duration
	// Duration covers queueing for a concurrency slot and the handler.
	Duration    time.Duration
	ResultBytes int64
	// Result holds the result JSON when the request keeps results.
	Result json.RawMessage
}

// Stats measure one execution.
type Stats struct {
	Duration        time.Duration
	CPUTime         time.Duration
	QueueTime       time.Duration
	PeakMemoryBytes int64
	// ToolCalls counts every call the script made, rejected ones included.
	ToolCalls       int32
	ToolResultBytes int64
	OutputBytes     int64
	// LogBytes counts the text of the kept log entries (output dropped at
	// the log limits is not counted; LogsTruncated says there was some).
	LogBytes int64
	// ResultTruncated reports that the result was cut to fit the output
	// limits (OverflowTruncate); OutputBytes is then the truncated size and
	// UntruncatedOutputBytes the size before.
	ResultTruncated        bool
	UntruncatedOutputBytes int64
	// DroppedItems counts the array items and object keys truncation
	// removed; CutStrings the strings it shortened.
	DroppedItems int64
	CutStrings   int64
}

// Result is the outcome of an execution that ran.
type Result struct {
	ExecutionID string
	// Result is the JSON result on success.
	Result json.RawMessage
	// Error is the classified failure, nil on success.
	Error *fault.Error
	// ModelMessage is what to show a model (see ModelMessage).
	ModelMessage    string
	Logs            []LogEntry
	LogsTruncated   bool
	Stats           Stats
	Trace           []Record
	EffectiveLimits limits.Limits
	// Pending lists the calls a paused execution waits for (empty when it
	// ended); Continuation resumes it until ContinuationExpires.
	Pending             []Action
	Continuation        string
	ContinuationExpires time.Time
}

// ToolQuery selects tools to describe (ListTools).
type ToolQuery struct {
	// Query ranks the tools by relevance to this text; empty keeps the
	// order by name.
	Query string
	// Limit is the most tools to return; 0 means no limit.
	Limit int
	// Names restricts the answer to these tools; an unknown name is an
	// error.
	Names []string
	// TypeScript asks for TypeScript declarations of the selected tools.
	TypeScript bool
	// Language is the language the prompt is written for: LanguagePython
	// for Python; anything else JavaScript (TypeScript with TypeScript).
	Language Language
}

// ToolList describes the selected tools.
type ToolList struct {
	// Tools are the selected tools, most relevant first with a query.
	Tools []tools.Definition
	// TypeScript holds declarations of `input` and the tools, when asked.
	TypeScript string
	// Prompt is a model-facing description of how to write a ptc program
	// with these tools.
	Prompt string
	// ApproxTokens approximates the model tokens of the model-facing text.
	ApproxTokens int
	// Matches gives each tool's relevance score, in the order of Tools,
	// when a query was given.
	Matches []ToolMatch
}

// ToolMatch is the relevance of one tool to a ToolQuery.Query.
type ToolMatch struct {
	Name  string
	Score float64
}

// StubJSON returns raw when it is at most max bytes, else the stub that
// stands for it where a copy is kept (a trace record, a progress message):
// {"$truncated":true,"bytes":N,"sha256":"…"}, with raw's size and hex
// SHA-256.
func StubJSON(raw json.RawMessage, max int) json.RawMessage {
	if len(raw) <= max {
		return raw
	}
	sum := sha256.Sum256(raw)
	return json.RawMessage(fmt.Sprintf(`{"$truncated":true,"bytes":%d,"sha256":%q}`, len(raw), hex.EncodeToString(sum[:])))
}

// QuotedBytes is how much of a caller's value a message quotes (Clip).
const QuotedBytes = 80

// Clip returns s cut to at most n bytes (at a UTF-8 boundary) with "…"
// appended when cut: for quoting a caller's value in a message.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
