package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsonval"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/tools"
)

// Execute prepares and runs a request under the tenant's ceilings.
func (e *Executor) Execute(ctx context.Context, req core.Request, tenant limits.Limits) (*core.Result, *fault.Error) {
	p, err := e.PrepareContext(ctx, req, tenant)
	if err != nil {
		return nil, err
	}
	return e.Run(ctx, p), nil
}

// Run executes a prepared request. It always returns a Result; a
// resumable one may be paused (Result.Pending and Continuation set).
func (e *Executor) Run(ctx context.Context, p *Prepared) *core.Result {
	start := time.Now()
	ctx, span := e.startSpan(ctx, p)
	var res *core.Result
	if p.resumable {
		res = e.runResumable(ctx, p)
	} else {
		d := bridge.New(e.bridgeConfig(p, start))
		logs := runtime.NewLogBuffer(start, p.limits, p.req.OnLog)
		out := e.runJob(ctx, p, e.job(p, d, logs, p.limits))
		res = result(ctx, p, out, d, logs)
		res.Stats.Duration = time.Since(start)
		res.ModelMessage = core.ModelMessage(res)
	}
	e.tracing.EndExecution(span, res)
	return res
}

// startSpan starts the execution span of p's execution, or of the segment
// of it that a resume runs: every segment's tool calls, outcome and stats
// are in a span of its own.
func (e *Executor) startSpan(ctx context.Context, p *Prepared) (context.Context, trace.Span) {
	return e.tracing.StartExecution(ctx, telemetry.Execution{
		ID: p.id, Language: p.req.Language, Isolation: e.isolation[p.req.Language],
		SourceBytes: len(p.req.Source) + len(p.req.Module), InputBytes: len(p.req.Input),
		Tools: len(p.tools), Timeout: p.limits.Timeout.Milliseconds(), Resumed: p.resume != nil,
	})
}

// bridgeConfig is the dispatcher configuration of p's execution.
func (e *Executor) bridgeConfig(p *Prepared, start time.Time) bridge.Config {
	var traceContext func(context.Context) (string, string)
	if e.tracing.Enabled() {
		traceContext = telemetry.CallTraceContext
	}
	return bridge.Config{
		TraceContext:  traceContext,
		ExecutionID:   p.id,
		Tools:         p.tools,
		MaxCalls:      p.limits.MaxToolCalls,
		MaxConcurrent: p.limits.MaxConcurrentToolCalls,
		Start:         start,
		KeepResults:   p.req.IncludeToolResults,
		Observer:      core.Observers(p.req.Observer, e.callSpans(p)),
		Approvals:     p.approvals,
		Approve:       p.req.Approve,
	}
}

// job is the engine's view of p's execution, under lim.
func (e *Executor) job(p *Prepared, d *bridge.Dispatcher, logs *runtime.LogBuffer, lim limits.Limits) *runtime.Job {
	job := &runtime.Job{
		ExecutionID: p.id,
		Language:    p.req.Language,
		Source:      p.req.Source,
		Module:      p.req.Module,
		Input:       p.req.Input,
		Limits:      engineLimits(lim, p.req.Overflow),
		Tools:       d,
		Logs:        logs,
		Determinism: p.det,
	}
	if len(job.Input) == 0 {
		job.Input = json.RawMessage("null")
	}
	return job
}

// runJob runs a job on p's engine. WebAssembly runs in the worker
// processes when there are any (resumable executions too: they are
// stopped at a pause and re-run on resume, like JavaScript), without loop
// checks; the module was checked by a worker's compile, which keeps it
// compiled for the execution.
func (e *Executor) runJob(ctx context.Context, p *Prepared, job *runtime.Job) *runtime.Outcome {
	switch {
	case p.modHash != "" && e.wasmWorkers() != nil:
		job.Module, job.ModuleSHA256 = p.req.Module, p.modHash
		return safeRun(ctx, e.pool, job)
	case p.modEng != nil:
		return safeRunHash(ctx, p, job)
	}
	return safeRun(ctx, p.engine, job)
}

// result assembles the Result of an execution that ended: the result
// (checked against the result schema, then fitted to the output limits)
// or the failure, the logs, the trace and the stats (Duration and
// ModelMessage are the caller's).
func result(ctx context.Context, p *Prepared, out *runtime.Outcome, d *bridge.Dispatcher, logs *runtime.LogBuffer) *core.Result {
	res := &core.Result{ExecutionID: p.id, EffectiveLimits: p.limits}
	// The result schema applies to the script's result, before any
	// truncation. The check stops if the caller goes.
	if out.Err == nil && p.result != nil {
		vs, err := p.result.ValidateContext(ctx, out.Result)
		if ctx.Err() != nil {
			out.Err = fault.New(fault.KindCancelled, "the execution was cancelled while its result was checked against the result schema")
		} else if err != nil || len(vs) > 0 {
			msg := "the result is not valid JSON"
			switch {
			case errors.Is(err, tools.ErrCheckTooCostly):
				msg = "the result could not be checked against the result schema: " + err.Error()
			case errors.Is(err, jsonval.ErrMergedNames):
				msg = "the result has property names that differ only in unpaired surrogates (\\ud800-\\udfff), which the result schema cannot tell apart; rename them"
			case err == nil:
				msg = "the result does not match the result schema: " + tools.FormatViolations(vs)
			}
			out.Err = fault.New(fault.KindResultSchema, "%s", msg)
		}
	}
	fitOutput(out, p.limits, p.req.Overflow, &res.Stats)
	if out.Err != nil {
		res.Error = out.Err
	} else {
		res.Result = out.Result
	}
	res.Logs, res.LogsTruncated = logs.Entries()
	res.Trace = endTrace(d.Trace())
	st := &res.Stats
	st.CPUTime = out.CPUTime
	st.QueueTime = p.queued
	st.PeakMemoryBytes = out.PeakMemoryBytes
	st.ToolCalls = d.Calls()
	st.ToolResultBytes = d.ResultBytes()
	st.OutputBytes = int64(len(res.Result))
	st.LogBytes = logs.Bytes()
	return res
}

// callSpans is the tracing observer of p's tool calls, nil with tracing
// off.
func (e *Executor) callSpans(p *Prepared) core.CallObserver {
	if !e.tracing.Enabled() {
		return nil
	}
	client := p.req.ClientTools
	isClient := func(name string) bool {
		for _, t := range client {
			if t.Name == name {
				return true
			}
		}
		return false
	}
	describe := func(name string) (string, bool) {
		if c, ok := e.reg.Lookup(name); ok {
			return c.Description, true
		}
		for _, t := range client {
			if t.Name == name {
				return t.Description, true
			}
		}
		return "", false
	}
	return e.tracing.CallSpans(isClient, describe)
}

// safeRunHash runs a held module; a module evicted since Prepare is an
// internal failure (the caller may retry with the bytes).
func safeRunHash(ctx context.Context, p *Prepared, job *runtime.Job) (out *runtime.Outcome) {
	defer func() {
		if r := recover(); r != nil {
			out = &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal, Message: "internal error", Cause: fmt.Errorf("engine panic: %v", r)}}
		}
	}()
	out, err := p.modEng.RunHash(ctx, p.modHash, job)
	if err != nil {
		return &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal,
			Message: "the module was evicted from the server's cache before it ran; send the module bytes again", Cause: err}}
	}
	return out
}

// safeRun runs an engine, turning a panic into an INTERNAL failure.
func safeRun(ctx context.Context, e runtime.Engine, job *runtime.Job) (out *runtime.Outcome) {
	defer func() {
		if r := recover(); r != nil {
			out = &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal, Message: "internal error",
				Cause: fmt.Errorf("engine panic: %v", r)}}
		}
	}()
	out = e.Run(ctx, job)
	if out == nil {
		out = &runtime.Outcome{Err: fault.New(fault.KindInternal, "internal error")}
	}
	return out
}

// endTrace gives each call the trace shows unfinished — one still waiting
// (for its caller, an approval, or a tool) when the execution ended — the
// code the script gets for it, "cancelled", so that every failed call in a
// final trace is classified. trace is a copy; it is returned.
func endTrace(trace []core.Record) []core.Record {
	for i := range trace {
		if r := &trace[i]; !r.OK && r.ErrorCode == "" {
			r.ErrorCode, r.ErrorMessage = tools.CodeCancelled, "the execution ended before the call finished"
		}
	}
	return trace
}
