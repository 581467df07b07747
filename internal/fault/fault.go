// Package fault defines the classified errors of an execution: a stable Kind
// (mirroring ptc.v1.ErrorKind) plus the message, source position and tool
// that a caller or a model needs to act on the failure.
//
// It imports nothing from the rest of ptc, so every layer may use it.
package fault

import (
	"fmt"
)

// Kind classifies why an execution failed. The values and their order match
// the ptc.v1.ErrorKind enum.
type Kind int32

// The error kinds. KindUnspecified is never attached to a real failure.
const (
	KindUnspecified Kind = iota
	KindSyntax
	KindScript
	KindTimeout
	KindCPULimit
	KindMemoryLimit
	KindToolCallLimit
	KindOutputLimit
	KindResultSchema
	KindCancelled
	KindInternal
)

var kindNames = [...]string{
	KindUnspecified:   "UNSPECIFIED",
	KindSyntax:        "SYNTAX_ERROR",
	KindScript:        "SCRIPT_ERROR",
	KindTimeout:       "TIMEOUT",
	KindCPULimit:      "CPU_LIMIT",
	KindMemoryLimit:   "MEMORY_LIMIT",
	KindToolCallLimit: "TOOL_CALL_LIMIT",
	KindOutputLimit:   "OUTPUT_LIMIT",
	KindResultSchema:  "RESULT_SCHEMA_VIOLATION",
	KindCancelled:     "CANCELLED",
	KindInternal:      "INTERNAL",
}

// String returns the kind's name without the ERROR_KIND_ prefix, e.g. "TIMEOUT".
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("KIND_%d", int32(k))
	}
	return kindNames[k]
}

// Kinds lists every kind that a failure can carry, in enum order.
func Kinds() []Kind {
	return []Kind{KindSyntax, KindScript, KindTimeout, KindCPULimit, KindMemoryLimit,
		KindToolCallLimit, KindOutputLimit, KindResultSchema, KindCancelled, KindInternal}
}

// Error is a classified execution failure. Line and Column are 1-based
// positions in the caller's source, zero when unknown.
type Error struct {
	Kind    Kind
	Message string
	Line    int
	Column  int
	// Stack is the script-level stack trace (never a Go stack).
	Stack string
	// Tool names the tool involved, if any.
	Tool string
	// Limit and Observed describe a limit breach in the limit's unit
	// (bytes, calls or nanoseconds); zero when not applicable.
	Limit    int64
	Observed int64
	// Cause is the underlying error, kept for errors.Is/As; never shown to a model.
	Cause error
}

// New returns an Error of kind k with a formatted message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error of kind k whose message is msg and whose cause is err.
func Wrap(k Kind, err error, msg string) *Error {
	return &Error{Kind: k, Message: msg, Cause: err}
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: %s (line %d, column %d)", e.Kind, e.Message, e.Line, e.Column)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is an *Error of the same kind, so that
// errors.Is(err, &fault.Error{Kind: fault.KindTimeout}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Kind == e.Kind
}
