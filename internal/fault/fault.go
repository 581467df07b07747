// Package fault is ptc's one error model. An Error is either a request that
// did not run — a Code with the values of gRPC status codes
// (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...) — or an execution that ran and
// failed — a Kind mirroring ptc.v1.ErrorKind (TIMEOUT, MEMORY_LIMIT, ...) —
// plus the message, source position, tool and limit that a caller or a
// model needs to act on it.
//
// Every limit breach is built by Breach, which always fills Limit and
// Observed. The root package converts an Error to *ptc.Error in one place;
// internal/wire converts it to and from gRPC statuses and proto messages.
//
// It imports nothing from the rest of ptc, so every layer may use it.
package fault

import (
	"context"
	"errors"
	"fmt"
	"time"
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
	KindPauseLimit
	KindDiverged
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
	KindPauseLimit:    "PAUSE_LIMIT",
	KindDiverged:      "RESUME_DIVERGED",
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
		KindToolCallLimit, KindOutputLimit, KindResultSchema, KindCancelled, KindInternal, KindPauseLimit, KindDiverged}
}

// IsBreach reports whether k is the kind of a limit breach (the kinds
// Breach builds).
func (k Kind) IsBreach() bool {
	switch k {
	case KindTimeout, KindCPULimit, KindMemoryLimit, KindToolCallLimit, KindOutputLimit, KindPauseLimit:
		return true
	}
	return false
}

// Code classifies a request that did not run. The values are those of gRPC
// status codes (google.golang.org/grpc/codes), so that a status converts
// without a table; CodeOK marks an Error that is an execution failure.
type Code uint32

// The request codes.
const (
	CodeOK                 Code = 0
	CodeCanceled           Code = 1
	CodeUnknown            Code = 2
	CodeInvalidArgument    Code = 3
	CodeDeadlineExceeded   Code = 4
	CodeNotFound           Code = 5
	CodeAlreadyExists      Code = 6
	CodePermissionDenied   Code = 7
	CodeResourceExhausted  Code = 8
	CodeFailedPrecondition Code = 9
	CodeAborted            Code = 10
	CodeOutOfRange         Code = 11
	CodeUnimplemented      Code = 12
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
	CodeDataLoss           Code = 15
	CodeUnauthenticated    Code = 16
)

var codeNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// String returns the code's name as gRPC spells it, e.g. "INVALID_ARGUMENT".
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}

// Error is a request that did not run (Code set, Kind unspecified) or an
// execution that failed (Kind set, Code OK). Line and Column are 1-based
// positions in the caller's source, zero when unknown.
type Error struct {
	// Code is the request code; CodeOK for an execution failure.
	Code Code
	// Kind classifies an execution failure; KindUnspecified for a request
	// error.
	Kind    Kind
	Message string
	Line    int
	Column  int
	// Stack is the script-level stack trace (never a Go stack).
	Stack string
	// Tool names the tool involved, if any.
	Tool string
	// Limit and Observed describe a limit breach in the limit's unit
	// (bytes, calls or nanoseconds); Breach always sets both. Zero when not
	// a breach.
	Limit    int64
	Observed int64
	// RetryAfter, for a request refused for load, is how long the caller
	// should wait before retrying; zero when not given.
	RetryAfter time.Duration
	// Reason, for a request error, names its cause in a stable,
	// machine-readable form (one of the Reason constants), sent as a
	// google.rpc.ErrorInfo detail; empty when the code says enough.
	Reason string
	// Cause is the underlying error, kept for errors.Is/As; never shown to a model.
	Cause error
}

// New returns an execution failure of kind k with a formatted message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an execution failure of kind k whose message is msg and
// whose cause is err.
func Wrap(k Kind, err error, msg string) *Error {
	return &Error{Kind: k, Message: msg, Cause: err}
}

// Breach returns the failure of an execution that went past a limit, in the
// limit's unit: limit is the limit in force and observed the value measured
// when the breach was detected. A breach is at least its limit, so an
// observed value below the limit (not measured) is reported as the limit.
// Every limit breach in ptc is built here.
func Breach(k Kind, limit, observed int64, format string, args ...any) *Error {
	if observed < limit {
		observed = limit
	}
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...), Limit: limit, Observed: observed}
}

// Reject returns a request error with code c and a formatted message.
func Reject(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// FromContext returns the request error of a call that ended with its
// context: CANCELLED for context.Canceled, DEADLINE_EXCEEDED for
// context.DeadlineExceeded (and UNKNOWN otherwise), with err as the cause
// so that errors.Is(e, context.Canceled) holds.
func FromContext(err error) *Error {
	c := CodeUnknown
	switch {
	case errors.Is(err, context.Canceled):
		c = CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		c = CodeDeadlineExceeded
	}
	return &Error{Code: c, Message: err.Error(), Cause: err}
}

// Because sets the error's Reason and returns it.
func (e *Error) Because(reason string) *Error {
	e.Reason = reason
	return e
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Kind == KindUnspecified {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s: %s (line %d, column %d)", e.Kind, e.Message, e.Line, e.Column)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is an *Error without a message and of the same
// kind and code, so that errors.Is(err, &fault.Error{Kind: fault.KindTimeout})
// and errors.Is(err, &fault.Error{Code: fault.CodeInvalidArgument}) work.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Kind == e.Kind && t.Code == e.Code
}
