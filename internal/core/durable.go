package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/tools"
)

// ErrPaused is the cause of the context of a resumable execution that
// paused: every call still open waits for its caller (a client tool or an
// approval) and the engine is told to stop. It is not a failure.
var ErrPaused = errors.New("the execution paused for its caller")

// ActionKind says what a paused call waits for. The values match
// ptc.v1.ActionKind.
type ActionKind int32

// The kinds of action a paused execution waits for.
const (
	ActionUnspecified ActionKind = 0
	// ActionClientTool: a call to a tool the caller serves; the answer is
	// its output or its error.
	ActionClientTool ActionKind = 1
	// ActionApproval: a call to a server tool that needs approval; the
	// answer approves it (it then runs) or denies it with a reason.
	ActionApproval ActionKind = 2
)

var actionNames = [...]string{"unspecified", "client_tool", "approval"}

// String returns "client_tool" or "approval".
func (k ActionKind) String() string {
	if k >= 0 && int(k) < len(actionNames) {
		return actionNames[k]
	}
	return fmt.Sprintf("action(%d)", int32(k))
}

// Action is one call a paused execution waits for.
type Action struct {
	// CallID names the call in an Answer: "c" and the call's seq.
	CallID string
	Kind   ActionKind
	// Seq is the call's 1-based number among the execution's calls.
	Seq  int32
	Tool string
	// Arguments are the call's JSON arguments, validated against the
	// tool's input schema.
	Arguments json.RawMessage
	// IdempotencyKey is "<execution_id>/<seq>", the same on every resume.
	IdempotencyKey string
	// Reason says why a call needs approval (empty for a client tool).
	Reason string
	// Traceparent and Tracestate are the W3C trace context of the call's
	// span, for the caller that serves or decides the call; empty when no
	// span is recorded for it. They are not part of a continuation.
	Traceparent, Tracestate string
}

// CallID is the call id of the call numbered seq.
func CallID(seq int32) string { return fmt.Sprintf("c%d", seq) }

// Answer answers one Action: exactly one of Output, Error, Approve and
// Deny is set.
type Answer struct {
	CallID string
	// Output is a client tool's JSON result.
	Output json.RawMessage
	// Error is a client tool's failure.
	Error *tools.Error
	// Approve lets an approval's call run; Deny refuses it, with Reason.
	Approve, Deny bool
	Reason        string
}

// Approver decides an approval while the execution runs (a Session's
// client, a Go callback): approved, or denied with a reason. A context
// that ends first denies it.
type Approver func(ctx context.Context, a Action) (approved bool, reason string)

// Journal is what a resumable execution has given its script so far, the
// record that lets any process re-run it: every call delivered to the
// script, in the order it was delivered, with its outcome, and the calls it
// waits for. Server tools that ran are in it with their results, so a
// re-run feeds them back instead of running them again.
type Journal struct {
	// Calls are the delivered calls, in delivery order.
	Calls []JournalEntry
	// Pending are the calls the execution waits for, by seq.
	Pending []Action
}

// MaxJournaledArgs bounds the arguments a journal entry keeps verbatim (to
// show them when a re-run diverges); larger ones are kept as their SHA-256.
const MaxJournaledArgs = 1 << 10

// JournalEntry is one delivered call of a Journal.
type JournalEntry struct {
	Seq  int32
	Tool string
	// ArgsSHA256 identifies the arguments; Args holds them when they are
	// at most MaxJournaledArgs bytes.
	ArgsSHA256 [32]byte
	Args       json.RawMessage
	// Result is the result delivered; Failure the error (nil on success).
	Result  json.RawMessage
	Failure *CallFailure
	// StartedAfter and Duration are the call's timings in the trace.
	StartedAfter, Duration time.Duration
}

// CallFailure is a failed call as the script saw it (the fields of a
// bridge.CallError).
type CallFailure struct {
	Name, Code, Message string
	Violations          []tools.Violation
	Limit, Observed     int64
}
