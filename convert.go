package ptc

import (
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
	return out
}

func resultOf(r *core.Result) *Result {
	out := &Result{
		ExecutionID:     r.ExecutionID,
		Result:          r.Result,
		Error:           errorOf(r.Error),
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
	return out
}

// errorOf converts an internal error; nil stays nil.
func errorOf(e *fault.Error) *Error {
	if e == nil {
		return nil
	}
	return &Error{
		Code:       Code(e.Code),
		Kind:       ErrorKind(e.Kind),
		Message:    e.Message,
		Line:       e.Line,
		Column:     e.Column,
		Stack:      e.Stack,
		Tool:       e.Tool,
		Limit:      e.Limit,
		Observed:   e.Observed,
		RetryAfter: e.RetryAfter,
		cause:      e.Cause,
	}
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
