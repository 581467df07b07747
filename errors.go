package ptc

import (
	"errors"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
)

// Code classifies a request that did not run, as a gRPC status code does
// (the values are equal). Runner and Client report it alike: a Client
// converts the server's status back into an *Error with its Code.
type Code uint32

// The codes. A request error (*Error) has one; an execution failure
// (*ExecutionError, Result.Error) has a Kind instead.
const (
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
)

// String returns the code's name as gRPC spells it, e.g. "INVALID_ARGUMENT".
func (c Code) String() string { return fault.Code(c).String() }

// ErrorKind classifies a failed execution. The values match
// ptc.v1.ErrorKind.
type ErrorKind int32

// The error kinds.
const (
	KindSyntax        ErrorKind = 1
	KindScript        ErrorKind = 2
	KindTimeout       ErrorKind = 3
	KindCPULimit      ErrorKind = 4
	KindMemoryLimit   ErrorKind = 5
	KindToolCallLimit ErrorKind = 6
	KindOutputLimit   ErrorKind = 7
	KindResultSchema  ErrorKind = 8
	KindCancelled     ErrorKind = 9
	KindInternal      ErrorKind = 10
	// KindPauseLimit: a resumable execution would pause more often than
	// Limits.MaxPauses, waited paused longer than Limits.MaxPausedTime, or
	// its paused state did not fit a continuation.
	KindPauseLimit ErrorKind = 11
	// KindDiverged: a resumed execution, re-run to its pause, made another
	// call than the paused run did (Message names it).
	KindDiverged ErrorKind = 12
)

// String returns the kind's name, e.g. "TIMEOUT" or "SCRIPT_ERROR".
func (k ErrorKind) String() string { return fault.Kind(k).String() }

// Error is a request that did not run, as Runner.Execute, Client.Execute,
// Client.Run and the other calls return it, in-process and remotely
// alike: its Code says why. An execution that ran and failed is not an
// Error but a Result whose Error is an *ExecutionError. Compare with
// errors.Is against an *Error holding only a Code, or use CodeOf:
//
//	errors.Is(err, &ptc.Error{Code: ptc.ResourceExhausted})
//	ptc.CodeOf(err) == ptc.ResourceExhausted
type Error struct {
	// Code classifies the request error; never 0.
	Code Code
	// Message says what went wrong and what to change.
	Message string
	// RetryAfter, for a request refused for load, is how long to wait
	// before trying again (from the server's RetryInfo); zero when not
	// given.
	RetryAfter time.Duration
	// Reason, for some request errors, names the cause in a stable form
	// to branch on: for Resume, "CONTINUATION_EXPIRED",
	// "CONTINUATION_USED", "CONTINUATION_TAMPERED",
	// "CONTINUATION_MALFORMED", "ANSWERS_INVALID", … (docs/durable.md
	// lists them); empty otherwise.
	Reason string

	cause error
}

// Error implements the error interface: "CODE: message".
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Unwrap returns the underlying error, if any (for a Client, the gRPC
// status error, or the context's error when the caller's context ended).
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error without a message whose Code
// equals e's.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// ExecutionError is an execution that ran and failed, as Result.Error
// holds it (Runner and Client alike): its Kind says how. Compare with
// errors.Is against an *ExecutionError holding only a Kind, or use KindOf:
//
//	errors.Is(res.Error, &ptc.ExecutionError{Kind: ptc.KindTimeout})
//	ptc.KindOf(res.Error) == ptc.KindTimeout
type ExecutionError struct {
	// Kind classifies the failure; never 0.
	Kind ErrorKind
	// Message says what went wrong and what to change.
	Message string
	// Line and Column are 1-based positions in the caller's source, zero
	// when unknown.
	Line, Column int
	// Stack is the script-level stack trace (never a Go stack).
	Stack string
	// Tool names the tool involved, if any.
	Tool string
	// Limit and Observed describe a limit breach in the limit's unit
	// (bytes, calls, or nanoseconds for durations): the limit in force and
	// the value measured when the breach was detected — never below Limit,
	// and a lower bound where measuring stopped at the limit (an
	// OUTPUT_LIMIT message then says "at least"); zero when not a breach.
	Limit, Observed int64
}

// Error implements the error interface: "KIND: message (line L, column
// C)".
func (e *ExecutionError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: %s (line %d, column %d)", e.Kind, e.Message, e.Line, e.Column)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Is reports whether target is an *ExecutionError without a message whose
// Kind equals e's.
func (e *ExecutionError) Is(target error) bool {
	t, ok := target.(*ExecutionError)
	return ok && t.Message == "" && t.Kind == e.Kind
}

// CodeOf returns the Code of a request error: that of an *Error in err's
// chain, Unknown for any other error, and 0 for nil and for an execution
// failure (an *ExecutionError, which has a Kind instead). It works alike
// for Runner and Client errors.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e.Code
	}
	var x *ExecutionError
	if errors.As(err, &x) {
		return 0
	}
	return Unknown
}

// KindOf returns the Kind of an execution failure: that of an
// *ExecutionError in err's chain (Result.Error), 0 for nil (a nil
// Result.Error included) and for any other error, a request error
// included. It works alike for Runner and Client results.
func KindOf(err error) ErrorKind {
	var x *ExecutionError
	if errors.As(err, &x) && x != nil {
		return x.Kind
	}
	return 0
}
