package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/runtime"
	"github.com/ptcrun/ptc/tools"
)

// Execute prepares and runs a request under the tenant's ceilings.
func (e *Executor) Execute(ctx context.Context, req core.Request, tenant limits.Limits) (*core.Result, *fault.Error) {
	p, err := e.Prepare(req, tenant)
	if err != nil {
		return nil, err
	}
	return e.Run(ctx, p), nil
}

// Run executes a prepared request. It always returns a Result; a
// resumable one may be paused (Result.Pending and Continuation set).
func (e *Executor) Run(ctx context.Context, p *Prepared) *core.Result {
	if p.resumable {
		return e.runResumable(ctx, p)
	}
	start := time.Now()
	d := bridge.New(e.bridgeConfig(p, start))
	logs := runtime.NewLogBuffer(start, p.limits, p.req.OnLog)
	job := e.job(p, d, logs, p.limits)
	out := e.runJob(ctx, p, job)
	res := result(p, out, d, logs)
	res.Stats.Duration = time.Since(start)
	res.ModelMessage = core.ModelMessage(res)
	return res
}

// bridgeConfig is the dispatcher configuration of p's execution.
func (e *Executor) bridgeConfig(p *Prepared, start time.Time) bridge.Config {
	return bridge.Config{
		ExecutionID:   p.id,
		Tools:         p.tools,
		MaxCalls:      p.limits.MaxToolCalls,
		MaxConcurrent: p.limits.MaxConcurrentToolCalls,
		Start:         start,
		KeepResults:   p.req.IncludeToolResults,
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
		Limits:      lim,
		Tools:       d,
		Logs:        logs,
		Determinism: p.det,
	}
	if len(job.Input) == 0 {
		job.Input = json.RawMessage("null")
	}
	return job
}

// runJob runs a job on p's engine.
func (e *Executor) runJob(ctx context.Context, p *Prepared, job *runtime.Job) *runtime.Outcome {
	if p.modEng != nil {
		return safeRunHash(ctx, p, job)
	}
	return safeRun(ctx, p.engine, job)
}

// result assembles the Result of an execution that ended: the result
// (checked against the result schema) or the failure, the logs, the trace
// and the stats (Duration and ModelMessage are the caller's).
func result(p *Prepared, out *runtime.Outcome, d *bridge.Dispatcher, logs *runtime.LogBuffer) *core.Result {
	res := &core.Result{ExecutionID: p.id, EffectiveLimits: p.limits}
	if out.Err == nil && p.result != nil {
		if vs, err := p.result.Validate(out.Result); err != nil || len(vs) > 0 {
			msg := "the result is not valid JSON"
			if err == nil {
				msg = "the result does not match the result schema: " + tools.FormatViolations(vs)
			}
			out.Err = fault.New(fault.KindResultSchema, "%s", msg)
		}
	}
	if out.Err != nil {
		res.Error = out.Err
	} else {
		res.Result = out.Result
	}
	res.Logs, res.LogsTruncated = logs.Entries()
	res.Trace = d.Trace()
	res.Stats = core.Stats{
		CPUTime:         out.CPUTime,
		QueueTime:       p.queued,
		PeakMemoryBytes: out.PeakMemoryBytes,
		ToolCalls:       d.Calls(),
		ToolResultBytes: d.ResultBytes(),
		OutputBytes:     int64(len(res.Result)),
		LogBytes:        logs.Bytes(),
	}
	return res
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
