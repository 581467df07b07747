package ptc

import (
	"context"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// The one place where the public types convert to and from ptc's request
// model (internal/core). Limits, LogEntry and ToolCallRecord have the
// layout of their internal counterparts, so they convert directly: a field
// added to one and not the other fails to compile here.

func requestCore(r Request) core.Request {
	out := core.Request{
		ExecutionID: r.ExecutionID,
		Script: core.Script{
			Language:     core.Language(r.Language),
			Source:       r.Source,
			Module:       r.Module,
			ModuleSHA256: r.ModuleSHA256,
		},
		Input:              r.Input,
		Limits:             limits.Limits(r.Limits),
		AllowedTools:       r.AllowedTools,
		NoServerTools:      r.NoServerTools,
		ClientTools:        r.ClientTools,
		ResultSchema:       r.ResultSchema,
		IncludeToolResults: r.IncludeToolResults,
		Determinism:        core.Determinism{Deterministic: r.Deterministic, Seed: r.Seed, ClockStart: r.ClockStart, ClockStartSet: !r.ClockStart.IsZero()},
	}
	if on := r.OnLog; on != nil {
		out.OnLog = func(e core.LogEntry) { on(LogEntry(e)) }
	}
	if r.OnProgress != nil {
		out.Observer = progressObserver{on: r.OnProgress, values: r.ProgressValues}
		out.ProgressValues = r.ProgressValues
	}
	if r.TruncateResult {
		out.Overflow = core.OverflowTruncate
	}
	out.Resumable, out.RequireApproval = r.Resumable, r.RequireApproval
	if ap := r.Approve; ap != nil {
		out.Approve = func(ctx context.Context, a core.Action) (bool, string) { return decide(ctx, ap, actionOf(a)) }
	}
	return out
}

// reasonPanicked is the reason of a call denied because the approval
// callback panicked.
const reasonPanicked = "the approval callback failed unexpectedly; the call is denied"

// decide runs an approval callback. A callback that panics denies the
// call (fail closed, as a callback that throws does in the other
// clients); the panic's value stays out of the reason, which the script
// sees.
func decide(ctx context.Context, ap func(context.Context, Action) (bool, string), a Action) (ok bool, why string) {
	defer func() {
		if recover() != nil {
			ok, why = false, reasonPanicked
		}
	}()
	return ap(ctx, a)
}

// progressObserver turns the tool calls of an in-process execution into
// ProgressEvents.
type progressObserver struct {
	on     func(ProgressEvent)
	values bool
}

func (p progressObserver) CallStarted(ctx context.Context, ev *core.CallEvent) context.Context {
	p.on(progressOf(ev, int64(len(ev.Arguments)), int64(len(ev.Result)), 0, p.values))
	return ctx
}

func (p progressObserver) CallFinished(_ context.Context, ev *core.CallEvent) {
	p.on(progressOf(ev, int64(len(ev.Arguments)), int64(len(ev.Result)), 0, p.values))
}

// progressOf converts a call event (its sizes given: a remote event carries
// sizes without values).
func progressOf(ev *core.CallEvent, argBytes, resBytes, dropped int64, values bool) ProgressEvent {
	out := ProgressEvent{Seq: ev.Seq, Tool: ev.Tool, Finished: ev.Finished, StartedAfter: ev.StartedAfter,
		Duration: ev.Duration, ArgumentBytes: argBytes, Outcome: ev.Outcome(), Dropped: dropped}
	if ev.OK {
		out.ResultBytes = resBytes
	}
	if values {
		out.Arguments, out.Result, out.ErrorMessage = ev.Arguments, ev.Result, ev.ErrorMessage
	}
	return out
}

func answersCore(as []Answer) []core.Answer {
	out := make([]core.Answer, len(as))
	for i, a := range as {
		out[i] = core.Answer(a)
	}
	return out
}

func resultOf(r *core.Result) *Result {
	out := &Result{
		ExecutionID:     r.ExecutionID,
		Result:          r.Result,
		Error:           executionErrorOf(r.Error),
		ModelMessage:    r.ModelMessage,
		LogsTruncated:   r.LogsTruncated,
		Stats:           Stats(r.Stats),
		EffectiveLimits: Limits(r.EffectiveLimits),
	}
	if len(r.Logs) > 0 {
		out.Logs = make([]LogEntry, len(r.Logs))
		for i, e := range r.Logs {
			out.Logs[i] = LogEntry(e)
		}
	}
	if len(r.Trace) > 0 {
		out.Trace = make([]ToolCallRecord, len(r.Trace))
		for i, t := range r.Trace {
			out.Trace[i] = ToolCallRecord(t)
		}
	}
	if len(r.Pending) > 0 {
		out.Pending = make([]Action, len(r.Pending))
		for i, a := range r.Pending {
			out.Pending[i] = actionOf(a)
		}
		out.Continuation, out.ContinuationExpires = r.Continuation, r.ContinuationExpires
	}
	return out
}

// errorOf converts an internal request error; nil stays nil. A fault
// without a code (a failure the request path did not classify) is
// Internal.
func errorOf(e *fault.Error) *Error {
	if e == nil {
		return nil
	}
	code := Code(e.Code)
	if code == 0 {
		code = Internal
	}
	return &Error{Code: code, Message: e.Message, RetryAfter: e.RetryAfter, Reason: e.Reason, cause: e.Cause}
}

// executionErrorOf converts an internal execution failure; nil stays nil.
func executionErrorOf(e *fault.Error) *ExecutionError {
	if e == nil {
		return nil
	}
	return &ExecutionError{Kind: ErrorKind(e.Kind), Message: e.Message, Line: e.Line, Column: e.Column,
		Stack: e.Stack, Tool: e.Tool, Limit: e.Limit, Observed: e.Observed}
}

func toolQueryCore(q ToolQuery) core.ToolQuery {
	return core.ToolQuery{Query: q.Query, Limit: q.Limit, Names: q.Names, TypeScript: q.TypeScript}
}

func toolListOf(l *core.ToolList) *ToolList {
	out := &ToolList{Tools: l.Tools, TypeScript: l.TypeScript, Prompt: l.Prompt, ApproxTokens: l.ApproxTokens}
	for _, m := range l.Matches {
		out.Scores = append(out.Scores, m.Score)
	}
	return out
}

func actionOf(a core.Action) Action {
	return Action{CallID: a.CallID, Approval: a.Kind == core.ActionApproval, Seq: a.Seq, Tool: a.Tool, Arguments: a.Arguments,
		IdempotencyKey: a.IdempotencyKey, Reason: a.Reason, Traceparent: a.Traceparent, Tracestate: a.Tracestate}
}
