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

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/ipc"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// Supervision: one execution on a worker, from the Execute frame to its
// outcome — waiting, cancelling, killing at the deadline, and classifying
// the death of a worker for the executions it was running.

// runWorker runs one job on a worker process; mod is the module of a
// WebAssembly job (nil for JavaScript), told whether the worker held it.
func (p *Pool) runWorker(ctx context.Context, job *ptcruntime.Job, mod *wasmJob) *ptcruntime.Outcome {
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
	grace := p.cfg.KillGrace
	if mod != nil {
		// A guest cannot be interrupted: its worker is killed at the
		// deadline.
		grace = 0
	}
	es := newExecState(ctx, job, grace)
	es.wasm = mod != nil
	if !w.register(es) {
		// The worker died between acquire and register.
		p.release(w, false)
		return &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "the worker process ended before the execution started; run it again")}
	}
	x := executeFrame(es.slot, job)
	var out *ptcruntime.Outcome
	killed := false
	if mod != nil {
		mod.frame(x)
		if out = w.compile(ctx, es, mod); out == nil {
			// Compiling is not the execution's time: its clock and its
			// tool calls' deadline start now. No call has used the old
			// context (the Execute frame is not sent yet).
			old := es.tctx
			w.mu.Lock()
			es.started, es.tctx = time.Now(), newCallCtx(ctx, job.Limits.Timeout, grace)
			w.mu.Unlock()
			old.end(context.Canceled)
		}
	}
	if out == nil {
		if err := w.send(es.lane, &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Execute{Execute: x}}); err != nil {
			w.kill()
		}
		stop := p.watch(ctx, w, es, grace)
		stopCPU := func() bool { return false }
		if mod != nil {
			stopCPU = w.watchCPU(es)
		}
		out = w.serveExec(es)
		// A kill that fired as the execution finished must not hand the
		// dying worker to the next execution.
		killed = stopCPU()
		killed = stop() || killed
	}
	es.finish(out)
	w.unregister(es)
	if mod != nil {
		mod.unknown = es.unknownModule
		if mod.unknown {
			w.dropped(mod.hash)
		}
	}
	p.release(w, es.clean && !killed)
	return out
}

// serveExec reads the execution's frames itself, from its mailbox, and
// handles them until the worker reports it done: tool calls start (inline
// ones run) on this goroutine, so the frame, the call and the answer need
// no hand-off between threads. When the connection fails (the worker
// died, was killed or broke the protocol) the outcome comes from failAll.
func (w *proc) serveExec(es *execState) *ptcruntime.Outcome {
	var f wp.WorkerFrame
	decode := func(b []byte) error {
		proto.Reset(&f)
		return proto.Unmarshal(b, &f)
	}
	for {
		select {
		case out := <-es.done:
			// Answers queued for frames read with the Done go out now.
			_ = w.conn.Flush()
			return out
		default:
		}
		if err := es.mb.Next(context.Background(), decode); err != nil {
			// An undecodable frame breaks the protocol; any other error
			// means the connection failed. Either way the worker is gone
			// and failAll reports the execution.
			w.kill()
			return <-es.done
		}
		if err := w.handle(es.slot, &f); err != nil {
			w.stop(stopBroken, "it broke the frame protocol: "+err.Error())
			return <-es.done
		}
	}
}

// watch arms the execution's deadline and cancellation: the worker is
// killed when the execution has not finished KillGrace after its timeout;
// when ctx ends first, the worker is asked to cancel it (a Cancel frame)
// and killed if it has not finished KillGrace later. Neither depends on
// what the execution's goroutine is doing. The returned function disarms
// both and reports whether either had already fired.
func (p *Pool) watch(ctx context.Context, w *proc, es *execState, grace time.Duration) (stop func() (fired bool)) {
	var mu sync.Mutex
	var deadline, cancelKill *time.Timer
	disarmed := false
	if t := es.job.Limits.Timeout; t > 0 {
		deadline = time.AfterFunc(t+grace, func() {
			w.killFor(es, fault.KindTimeout)
		})
	}
	stopCancel := context.AfterFunc(ctx, func() {
		// Cancel first, then end the tool calls: their failures reach
		// the worker after the cancel, as in-process.
		pause := errors.Is(context.Cause(ctx), core.ErrPaused)
		es.paused.Store(pause)
		_ = w.send(cancelTag(es.lane), &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Cancel{Cancel: &wp.Cancel{Slot: es.slot, Pause: pause}}})
		es.tctx.end(ctx.Err())
		mu.Lock()
		defer mu.Unlock()
		if disarmed {
			return
		}
		cancelKill = time.AfterFunc(p.cfg.KillGrace, func() {
			if deadline != nil && !deadline.Stop() {
				return // the deadline's kill came first
			}
			w.killFor(es, fault.KindCancelled)
		})
	})
	return func() bool {
		stopCancel()
		mu.Lock()
		disarmed = true
		fired := cancelKill != nil && !cancelKill.Stop()
		mu.Unlock()
		if deadline != nil && !deadline.Stop() {
			fired = true
		}
		return fired
	}
}

// execState is one execution on a worker, as the supervisor tracks it.
type execState struct {
	// slot numbers the execution on its worker's connection; lane is the
	// worker's goroutine that runs it; mb receives its frames.
	slot    uint64
	lane    uint64
	mb      *ipc.Mailbox
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
	// killKind is set (under proc.mu) when the supervisor kills the
	// worker because of this execution.
	killKind fault.Kind
	// breach is the limit breach the worker reported, with the CPU time
	// and peak heap growth at that moment (under proc.mu).
	breach     *fault.Error
	breachCPU  time.Duration
	breachPeak int64
	// paused is set when the execution is stopped because it paused.
	paused atomic.Bool
	// wasm marks a WebAssembly execution; unknownModule is set when its
	// worker answered that it does not hold the module.
	wasm          bool
	unknownModule bool
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
			if !es.wasm {
				// A guest is never interrupted: no need to say why here.
				fe.Message += " (the script was inside a built-in that cannot be interrupted, so its worker was stopped)"
			}
			fe.Cause = errors.Join(readErr, waitErr)
			out.CPUTime, out.PeakMemoryBytes = es.breachCPU, es.breachPeak
		case es.killKind == fault.KindTimeout && es.wasm:
			// The in-process engine's words for the same outcome.
			fe = fault.Breach(fault.KindTimeout, es.job.Limits.Timeout.Nanoseconds(), time.Since(es.started).Nanoseconds(),
				"the execution did not finish within %s; do less work per execution or raise the timeout", es.job.Limits.Timeout)
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
		if es.wasm {
			// The engine bounds linear memory exactly (a refused grow,
			// not a death): what ran out is the rest — the guest's call
			// stack, the engine's own data.
			fe.Message = fmt.Sprintf("the module's worker process ran out of memory outside the module's linear memory (in its call stack or the engine's own data; the process may use about twice the limit of %s) and was stopped; recurse less deeply", byteSize(es.job.Limits.MemoryBytes))
		}
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
