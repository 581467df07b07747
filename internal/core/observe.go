package core

import (
	"context"
	"encoding/json"
	"time"
)

// CallEvent is one tool call as a CallObserver sees it: when the script
// makes it (Finished false) and when it ends (Finished true). The bridge
// fills it; the same event is passed to CallStarted and, completed, to
// CallFinished.
//
// Arguments and Result are the call's JSON values, shared with the bridge:
// observers must not modify them, and an observer that forwards events
// outside the process (progress for a caller, span attributes) passes
// values on only when asked to — sizes, codes and durations are always
// safe to send.
type CallEvent struct {
	ExecutionID string
	// Seq is the call's number, as in its Record.
	Seq  int32
	Tool string
	// IdempotencyKey is "<execution id>/<seq>", as handlers receive it.
	IdempotencyKey string
	// StartedAfter is the time from the start of the execution to the call.
	StartedAfter time.Duration
	// Arguments are the JSON arguments the script passed.
	Arguments json.RawMessage

	// Finished is set in the event passed to CallFinished.
	Finished bool
	// Duration covers queueing for a concurrency slot and the handler.
	Duration time.Duration
	OK       bool
	// ErrorCode and ErrorMessage describe a failed call.
	ErrorCode    string
	ErrorMessage string
	// Result is the JSON result of a call that succeeded.
	Result json.RawMessage
}

// Outcome is "ok" for a call that succeeded, else its error code; empty
// before the call finished.
func (e *CallEvent) Outcome() string {
	switch {
	case !e.Finished:
		return ""
	case e.OK:
		return "ok"
	}
	return e.ErrorCode
}

// CallObserver watches the tool calls of an execution: live progress for a
// Session or an MCP client, spans for tracing. The bridge calls CallStarted
// synchronously as the script makes each call, so calls are observed in
// their order (refused calls included, at most bridge.MaxRefusedRecords of
// them past the call budget), and CallFinished once the call ended, from
// whichever goroutine ran it. Both must be quick and must not block: a slow
// observer slows the script.
type CallObserver interface {
	// CallStarted observes a call being made and returns the context the
	// call runs in (ctx, or ctx with values added, such as a span).
	CallStarted(ctx context.Context, ev *CallEvent) context.Context
	// CallFinished observes the end of a call; ctx is the context
	// CallStarted returned.
	CallFinished(ctx context.Context, ev *CallEvent)
}

// PauseObserver is a CallObserver that also observes the calls left
// waiting for their caller when the run of a resumable execution stops at
// a pause: they get no CallFinished from this run (a resume answers them
// in a re-run, which observes them anew). The tracing observer ends their
// spans; progress observers need not implement it. ctx is the context
// CallStarted returned.
type PauseObserver interface {
	CallPaused(ctx context.Context, ev *CallEvent)
}

// Observers combines observers into one that calls each in order; nil
// entries are skipped, and it returns nil when none is left.
func Observers(obs ...CallObserver) CallObserver {
	var out multiObserver
	for _, o := range obs {
		if o != nil {
			out = append(out, o)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type multiObserver []CallObserver

func (m multiObserver) CallStarted(ctx context.Context, ev *CallEvent) context.Context {
	for _, o := range m {
		ctx = o.CallStarted(ctx, ev)
	}
	return ctx
}

func (m multiObserver) CallFinished(ctx context.Context, ev *CallEvent) {
	for _, o := range m {
		o.CallFinished(ctx, ev)
	}
}

func (m multiObserver) CallPaused(ctx context.Context, ev *CallEvent) {
	for _, o := range m {
		if p, ok := o.(PauseObserver); ok {
			p.CallPaused(ctx, ev)
		}
	}
}

// OverflowPolicy says what happens to a result larger than the output
// limits (max_output_bytes, max_result_tokens). The values match
// ptc.v1.OverflowPolicy.
type OverflowPolicy int32

// The overflow policies. OverflowUnspecified fails, as OverflowFail.
const (
	OverflowUnspecified OverflowPolicy = 0
	OverflowFail        OverflowPolicy = 1
	OverflowTruncate    OverflowPolicy = 2
)
