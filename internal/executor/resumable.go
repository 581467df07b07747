package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// A resumable execution runs in segments: from its start, or from a
// resume, until it pauses or ends. Its engine runs on its own goroutine
// (run, below); when the dispatcher says the execution paused, the
// segment's Result carries the pending calls and a continuation, and the
// engine either stops (the continuation re-runs it anywhere) or, when it
// runs in this process, stays parked — idle, its wall-clock budget
// stopped — so that a resume here goes on without a re-run (parked.go).

// errEvicted ends a parked engine that is dropped from memory.
var errEvicted = errors.New("the parked execution was evicted")

// live is a resumable execution whose engine runs (or is parked).
type live struct {
	p    *Prepared
	d    *bridge.Dispatcher
	logs *runtime.LogBuffer
	lim  limits.Limits

	// cancel ends the engine; rc is its pausable context when it may be
	// parked (nil otherwise); unlink detaches it from the caller's context.
	cancel context.CancelCauseFunc
	rc     *runCtx
	unlink func() bool
	// events is signalled when the execution pauses or diverges; outc
	// receives the engine's outcome (the engine goroutine's only send).
	events chan struct{}
	outc   chan *runtime.Outcome

	// usage is what the execution used before the engine started (but
	// Pauses and Paused, kept current); cpuBase is the CPU time before the
	// engine started; ranSince is when the engine last started running.
	usage    durable.Usage
	cpuBase  time.Duration
	ranSince time.Time
	pausedAt time.Time
	// pauseID names the parked execution's continuation.
	pauseID string
	bytes   int64
	once    sync.Once
}

// runResumable runs (or re-runs and goes on with) a resumable execution
// until it pauses or ends.
func (e *Executor) runResumable(ctx context.Context, p *Prepared) *core.Result {
	var usage durable.Usage
	var journal core.Journal
	var answers map[int32]core.Answer
	if r := p.resume; r != nil {
		usage, journal, answers = r.usage, r.journal, r.answers
	}
	return e.await(ctx, e.start(ctx, p, usage, journal, answers))
}

// start starts the engine of a segment.
func (e *Executor) start(ctx context.Context, p *Prepared, usage durable.Usage, journal core.Journal, answers map[int32]core.Answer) *live {
	now := time.Now()
	lv := &live{p: p, lim: p.limits, usage: usage, cpuBase: usage.CPU, ranSince: now,
		events: make(chan struct{}, 1), outc: make(chan *runtime.Outcome, 1)}
	jobLim := p.limits
	if t := p.limits.Timeout; t > 0 {
		jobLim.Timeout = max(t-usage.Wall, time.Nanosecond)
	}
	if c := p.limits.CPUTime; c > 0 {
		jobLim.CPUTime = max(c-usage.CPU, time.Nanosecond)
	}
	var engineCtx context.Context
	if e.parkable(p) {
		// Detached from the caller so that it can outlive the call that
		// paused it; the caller's end still cancels it until it parks.
		base, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		lv.cancel = cancel
		lv.unlink = context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		lv.rc = newRunCtx(base, jobLim.Timeout)
		jobLim.Timeout = 0
		engineCtx = lv.rc
	} else {
		c, cancel := context.WithCancelCause(ctx)
		lv.cancel, lv.unlink = cancel, func() bool { return true }
		engineCtx = c
	}
	lv.logs = runtime.NewLogBuffer(now, p.limits, p.req.OnLog)
	lv.logs.Skip(int(usage.LogEntries))
	cfg := e.bridgeConfig(p, now.Add(-usage.Wall))
	cfg.Approve = nil // a resumable execution pauses for approvals
	cfg.Resumable, cfg.ClientTools, cfg.Journal, cfg.Answers = true, p.clientNames, journal, answers
	cfg.OnPause = func() {
		select {
		case lv.events <- struct{}{}:
		default:
		}
	}
	lv.d = bridge.New(cfg)
	job := e.job(p, lv.d, lv.logs, jobLim)
	job.Idle = lv.d.Idle
	// The engine goroutine ends when the engine returns: at the end of
	// the script, or when cancel (or the run context) stops it.
	go func() { lv.outc <- e.runJob(engineCtx, p, job) }()
	return lv
}

// await waits for a segment to pause or end.
func (e *Executor) await(ctx context.Context, lv *live) *core.Result {
	for {
		select {
		case out := <-lv.outc:
			return lv.ended(out)
		case <-lv.events:
			if fe := lv.d.Diverged(); fe != nil {
				lv.cancel(core.ErrPaused)
				<-lv.outc
				return lv.failed(fe)
			}
			journal, ok := lv.d.Paused()
			if !ok {
				continue
			}
			return e.paused(ctx, lv, journal)
		}
	}
}

// paused turns a pause into the segment's Result: the pending calls and a
// continuation. The engine is parked when it can be, stopped otherwise.
func (e *Executor) paused(ctx context.Context, lv *live, journal core.Journal) *core.Result {
	now := time.Now()
	usage := lv.usage
	usage.Wall += now.Sub(lv.ranSince)
	usage.CPU = lv.cpuBase + lv.d.PausedCPU()
	usage.Pauses++
	usage.LogEntries = int32(lv.logs.Count())
	stop := func() {
		lv.cancel(core.ErrPaused)
		<-lv.outc
		lv.release()
	}
	if m := lv.lim.MaxPauses; m > 0 && usage.Pauses > m {
		stop()
		return lv.failed(fault.Breach(fault.KindPauseLimit, int64(m), int64(usage.Pauses),
			"the execution would pause a %s time, more than its max_pauses of %d; answer more calls at once (start them together) or raise max_pauses", ordinal(usage.Pauses), m))
	}
	p := lv.p
	st := &durable.State{
		ExecutionID:        p.id,
		Script:             core.Script{Language: p.req.Language, Source: p.req.Source, ModuleSHA256: p.modHash},
		Input:              p.req.Input,
		Limits:             lv.lim,
		AllowedTools:       p.serverNames(),
		NoServerTools:      p.req.NoServerTools,
		RequireApproval:    p.req.RequireApproval,
		ResultSchema:       p.req.ResultSchema,
		IncludeToolResults: p.req.IncludeToolResults,
		Seed:               p.det.Seed,
		ClockStart:         p.det.ClockStart,
		Usage:              usage,
		Journal:            journal,
		PausedAt:           now,
	}
	for _, t := range p.req.ClientTools {
		st.ClientTools = append(st.ClientTools, t.Definition)
	}
	if len(st.AllowedTools) == 0 {
		st.NoServerTools = true
	}
	sealed, ferr := e.durable.Seal(ctx, p.req.Tenant, st)
	if ferr != nil {
		stop()
		return lv.failed(ferr)
	}
	res := lv.snapshot(usage)
	pending := map[int32]bool{}
	for _, a := range journal.Pending {
		pending[a.Seq] = true
	}
	res.Trace = slices.DeleteFunc(res.Trace, func(r core.Record) bool { return pending[r.Seq] })
	res.Pending, res.Continuation, res.ContinuationExpires = journal.Pending, sealed.Token, sealed.Expires
	lv.usage, lv.pausedAt = usage, now
	lv.logs.Skip(lv.logs.Count())
	if lv.rc == nil || !e.parked.park(lv, sealed.PauseID) {
		stop()
	} else if e.onPark != nil {
		e.onPark(ctx, sealed.PauseID, now.Add(e.parked.cfg.MaxAge))
	}
	res.ModelMessage = core.ModelMessage(res)
	return res
}

// snapshot is the Result of the execution so far (stats cumulative, logs
// since the last pause).
func (lv *live) snapshot(usage durable.Usage) *core.Result {
	res := &core.Result{ExecutionID: lv.p.id, EffectiveLimits: lv.lim}
	res.Logs, res.LogsTruncated = lv.logs.Entries()
	res.Trace = lv.d.Trace()
	res.Stats = core.Stats{
		Duration:        usage.Wall,
		CPUTime:         usage.CPU,
		QueueTime:       lv.p.queued,
		ToolCalls:       lv.d.Calls(),
		ToolResultBytes: lv.d.ResultBytes(),
		LogBytes:        lv.logs.Bytes(),
	}
	return res
}

// failed ends the execution with fe after the engine stopped.
func (lv *live) failed(fe *fault.Error) *core.Result {
	usage := lv.usage
	usage.Wall += time.Since(lv.ranSince)
	res := lv.snapshot(usage)
	res.Trace = endTrace(res.Trace)
	res.Error = fe
	res.ModelMessage = core.ModelMessage(res)
	return res
}

// ended is the Result of an execution whose engine returned.
func (lv *live) ended(out *runtime.Outcome) *core.Result {
	lv.release()
	wall := lv.usage.Wall + time.Since(lv.ranSince)
	cpu := lv.cpuBase + out.CPUTime
	// A re-run stopped by a limit or a cancellation before it reached
	// the pause point did not diverge: it is reported as what stopped it.
	stopped := (lv.rc != nil && lv.rc.expired()) || (out.Err != nil && (out.Err.Kind.IsBreach() || out.Err.Kind == fault.KindCancelled))
	if fe := lv.d.Diverged(); fe != nil && !stopped {
		out.Result, out.Err = nil, fe
	}
	switch {
	case lv.rc != nil && lv.rc.expired() && out.Err != nil && (out.Err.Kind == fault.KindCancelled || out.Err.Kind == fault.KindScript):
		out.Result, out.Err = nil, fault.Breach(fault.KindTimeout, int64(lv.lim.Timeout), int64(wall),
			"the script did not finish within its %s time limit", lv.lim.Timeout)
	case out.Err != nil && out.Err.Kind == fault.KindTimeout && lv.usage.Wall > 0:
		out.Err = fault.Breach(fault.KindTimeout, int64(lv.lim.Timeout), int64(wall),
			"the script did not finish within its %s time limit (time paused for the caller not counted)", lv.lim.Timeout)
	case out.Err != nil && out.Err.Kind == fault.KindCPULimit && lv.cpuBase > 0:
		out.Err = fault.Breach(fault.KindCPULimit, int64(lv.lim.CPUTime), int64(cpu),
			"the script used more than its %s of CPU time (replaying it to resume included)", lv.lim.CPUTime)
	}
	p := lv.p
	// A resumable execution outlives its callers' contexts: the result
	// schema check is bounded by its steps alone.
	res := result(context.Background(), p, out, lv.d, lv.logs)
	res.Stats.Duration, res.Stats.CPUTime = wall, cpu
	res.ModelMessage = core.ModelMessage(res)
	return res
}

// release frees the engine's contexts once it returned (or will not run
// again).
func (lv *live) release() {
	lv.once.Do(func() {
		lv.unlink()
		if lv.rc != nil {
			lv.rc.release()
		}
		lv.cancel(nil)
	})
}

// serverNames lists the server tools selected for p.
func (p *Prepared) serverNames() []string {
	client := map[string]bool{}
	for _, n := range p.clientNames {
		client[n] = true
	}
	var out []string
	for _, t := range p.tools {
		if !client[t.Name] {
			out = append(out, t.Name)
		}
	}
	return out
}

// parkable reports whether p's engine runs in this process, so that it
// can stay parked in memory while paused: Python of a resumable execution
// always does (it runs in this process), every other language unless it
// runs in worker processes (a pool in ModeInProcess runs JavaScript and
// TypeScript here too, and WebAssembly always runs here then).
func (e *Executor) parkable(p *Prepared) bool {
	if e.parked == nil || e.parked.cfg.Max < 0 {
		return false
	}
	if p.req.Language == core.LanguagePython {
		return true
	}
	return e.pool == nil || e.pool.Facts().Mode == worker.ModeInProcess
}

func ordinal(n int32) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return fmt.Sprintf("%dth", n)
	case n%10 == 1:
		return fmt.Sprintf("%dst", n)
	case n%10 == 2:
		return fmt.Sprintf("%dnd", n)
	case n%10 == 3:
		return fmt.Sprintf("%drd", n)
	}
	return fmt.Sprintf("%dth", n)
}
