package worker

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	wp "github.com/ptcrun/ptc/internal/workerproto"
	ptcruntime "github.com/ptcrun/ptc/runtime"
)

// Supervision: one execution on a worker, from the Execute frame to its
// outcome — waiting, cancelling, killing at the deadline, and classifying
// the death of a worker for the executions it was running.

// runWorker runs one job on a worker process.
func (p *Pool) runWorker(ctx context.Context, job *ptcruntime.Job) *ptcruntime.Outcome {
	began := time.Now()
	w, err := p.acquire(ctx)
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			fe := fault.Breach(fault.KindTimeout, job.Limits.Timeout.Nanoseconds(), time.Since(began).Nanoseconds(),
				"the execution timed out while waiting for a free worker; retry later or raise the pool's MaxWorkers")
			fe.Cause = err
			return &ptcruntime.Outcome{Err: fe}
		case ctx.Err() != nil:
			return &ptcruntime.Outcome{Err: fault.Wrap(fault.KindCancelled, err, "the execution was cancelled while waiting for a free worker")}
		default:
			return &ptcruntime.Outcome{Err: fault.Wrap(fault.KindInternal, err, "no worker process could run the execution; check the server's logs")}
		}
	}
	es := newExecState(ctx, job, p.cfg.KillGrace)
	if !w.register(es) {
		// The worker died between acquire and register.
		p.release(w, false)
		return &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "the worker process ended before the execution started; run it again")}
	}
	frame := &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Execute{Execute: executeFrame(es.slot, job)}}
	_ = w.send(frame) // a failed send stops the worker; wait sees its death
	out := p.wait(ctx, w, es)
	es.finish(out)
	p.release(w, es.clean)
	return out
}

// wait waits for an execution's Done frame, cancelling it when ctx ends
// and killing its worker when it overruns its deadline by KillGrace.
func (p *Pool) wait(ctx context.Context, w *proc, es *execState) *ptcruntime.Outcome {
	var deadline <-chan time.Time
	if t := es.job.Limits.Timeout; t > 0 {
		timer := time.NewTimer(t + p.cfg.KillGrace)
		defer timer.Stop()
		deadline = timer.C
	}
	var grace <-chan time.Time
	done := ctx.Done()
	for {
		select {
		case out := <-es.done:
			return out
		case <-done:
			done = nil
			// Cancel first, then end the tool calls: their failures reach
			// the worker after the cancel, as in-process.
			pause := errors.Is(context.Cause(ctx), core.ErrPaused)
			es.paused.Store(pause)
			_ = w.send(&wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Cancel{Cancel: &wp.Cancel{Slot: es.slot, Pause: pause}}})
			es.tctx.end(ctx.Err())
			timer := time.NewTimer(p.cfg.KillGrace)
			defer timer.Stop()
			grace = timer.C
		case <-deadline:
			deadline, grace = nil, nil
			p.stats.killed.Add(1)
			w.killFor(es, fault.KindTimeout)
		case <-grace:
			deadline, grace = nil, nil
			p.stats.killed.Add(1)
			w.killFor(es, fault.KindCancelled)
		}
	}
}

// execState is one execution on a worker, as the supervisor tracks it.
type execState struct {
	slot    uint64
	job     *ptcruntime.Job
	started time.Time
	// tctx bounds the execution's tool calls: it ends when the execution
	// finishes (see callCtx).
	tctx  *callCtx
	calls uint32
	// inflight counts the tool-call goroutines still running; wg waits
	// for them.
	inflight atomic.Int32
	wg       sync.WaitGroup
	done     chan *ptcruntime.Outcome
	clean    bool
	// paused is set when the execution is stopped because it paused.
	paused atomic.Bool
	// killKind is set (under proc.mu) when the supervisor kills the
	// worker because of this execution.
	killKind fault.Kind
	// breach is the limit breach the worker reported, with the CPU time
	// and peak heap growth at that moment (under proc.mu).
	breach     *fault.Error
	breachCPU  time.Duration
	breachPeak int64
	// breachTimer kills the worker when the execution does not stop after
	// its breach (under proc.mu).
	breachTimer *time.Timer
}

func newExecState(ctx context.Context, job *ptcruntime.Job, grace time.Duration) *execState {
	return &execState{job: job, started: time.Now(), done: make(chan *ptcruntime.Outcome, 1),
		tctx: newCallCtx(ctx, job.Limits.Timeout, grace)}
}

// toolDrain bounds how long a finished execution waits for tool handlers
// that ignore their cancelled context.
const toolDrain = 2 * time.Second

// finish ends the execution's tool calls and waits for them, bounded. A
// timed-out execution ends them as a deadline, any other as a cancel.
func (es *execState) finish(out *ptcruntime.Outcome) {
	if out.Err != nil && out.Err.Kind == fault.KindTimeout {
		es.tctx.end(context.DeadlineExceeded)
	} else {
		es.tctx.end(context.Canceled)
	}
	if es.inflight.Load() == 0 {
		return
	}
	ch := make(chan struct{})
	go func() { es.wg.Wait(); close(ch) }()
	t := time.NewTimer(toolDrain)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// failAll decides how every execution of a dead worker ends: the limit it
// was stopped for, the kill the supervisor made, or the death classified.
// It returns the outcomes by slot; the caller delivers them.
func (w *proc) failAll(execs map[uint64]*execState, readErr, waitErr error, poolKind fault.Kind, poolMsg string) map[uint64]*ptcruntime.Outcome {
	outs := make(map[uint64]*ptcruntime.Outcome, len(execs))
	for slot, es := range execs {
		var fe *fault.Error
		out := &ptcruntime.Outcome{}
		switch {
		case es.breach != nil && poolKind == fault.KindUnspecified:
			// The watchdog saw the breach but could not stop the script
			// (a built-in that cannot be interrupted): the worker then ran
			// out of memory or overran its deadline.
			fe = es.breach
			fe.Message += " (the script was inside a built-in that cannot be interrupted, so its worker was stopped)"
			fe.Cause = errors.Join(readErr, waitErr)
			out.CPUTime, out.PeakMemoryBytes = es.breachCPU, es.breachPeak
		case es.killKind == fault.KindTimeout:
			fe = fault.Breach(fault.KindTimeout, es.job.Limits.Timeout.Nanoseconds(), time.Since(es.started).Nanoseconds(),
				"the script did not finish within its %s time limit (it was stuck in a built-in that cannot be interrupted, so its worker was stopped); work on smaller data", es.job.Limits.Timeout)
		case es.killKind == fault.KindCancelled:
			fe = fault.New(fault.KindCancelled, "the execution was cancelled by the caller")
		case poolKind != fault.KindUnspecified:
			fe = fault.New(poolKind, "%s", poolMsg)
		default:
			fe = w.deathError(es, readErr, waitErr)
		}
		out.Err = fe
		outs[slot] = out
	}
	return outs
}

// deathError classifies the death of a worker for one of its executions,
// from what the Go runtime wrote before it died: MEMORY_LIMIT when the
// process ran out of memory (the runtime reports "out of memory" when
// RLIMIT_DATA refuses the heap, or fails to map a thread or a stack),
// SCRIPT_ERROR when a goroutine's stack passed the runtime's maximum (a
// recursion or nesting the engine did not bound) — both caused by what the
// script did — and INTERNAL otherwise (killed from outside, crashed, or
// broke the protocol).
func (w *proc) deathError(es *execState, readErr, waitErr error) *fault.Error {
	switch cause, observed := deathOf(w.stderr.String()); cause {
	case causeMemory:
		fe := fault.Breach(fault.KindMemoryLimit, es.job.Limits.MemoryBytes, observed,
			"the script exhausted its memory (limit %s) and its worker process was stopped; keep less data at once (process items in smaller batches, avoid building huge strings or arrays)", byteSize(es.job.Limits.MemoryBytes))
		fe.Cause = waitErr
		return fe
	case causeStack:
		return fault.Wrap(fault.KindScript, waitErr,
			"the script nested or recursed deeper than the engine's stack allows and its worker process was stopped; use iteration and flatter data")
	}
	how := "ended"
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			how = "was killed by signal " + ws.Signal().String()
		} else {
			how = fmt.Sprintf("exited with status %d", ee.ExitCode())
		}
	}
	cause := errors.Join(readErr, waitErr)
	if tail := lastLines(w.stderr.String(), 3); tail != "" {
		cause = fmt.Errorf("%w; worker stderr: %s", cause, tail)
	}
	return fault.Wrap(fault.KindInternal, cause,
		fmt.Sprintf("the worker process running the script %s unexpectedly; the execution was lost, run it again", how))
}

// byteSize renders a memory limit for a message: "64 MiB", "1536 KiB",
// "100 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0, n >= 64<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0, n >= 64<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	case n == 1:
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// lastLines returns the first n lines of a worker's stderr before any
// goroutine stack: the fatal error, not the stacks after it.
func lastLines(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\ngoroutine "); i >= 0 {
		s = s[:i]
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
