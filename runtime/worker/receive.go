package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	wp "github.com/ptcrun/ptc/internal/workerproto"
	ptcruntime "github.com/ptcrun/ptc/runtime"
)

// The supervisor's side of a worker's frames. A worker is untrusted input:
// every frame is bounded by the reader and checked here, a frame that
// breaks the protocol kills the worker, and what one execution's frames can
// make the supervisor hold is bounded by that execution's limits (its log
// buffer, its call budget).

// readLoop handles the worker's frames until its socket fails, then reaps
// the process and fails the executions it was running.
func (w *proc) readLoop() {
	defer w.pool.wg.Done()
	var f wp.WorkerFrame
	var err error
	for {
		if err = w.r.read(&f); err != nil {
			break
		}
		if err = w.handle(&f); err != nil {
			w.stop("it broke the frame protocol: " + err.Error())
			break
		}
	}
	w.kill()
	waitErr := w.cmd.Wait()
	_ = w.conn.Close()

	w.mu.Lock()
	execs := w.execs
	w.execs = nil
	poolKind, poolMsg := w.poolKillKind, w.poolKillMsg
	stopped := w.stopped
	w.mu.Unlock()

	w.pool.mu.Lock()
	w.dead = true
	w.pool.mu.Unlock()
	if len(execs) > 0 && poolKind == fault.KindUnspecified {
		w.pool.stats.died.Add(1)
	}
	outs := w.failAll(execs, err, waitErr, poolKind, poolMsg)
	// The record goes out before the outcomes, so that the worker's crash
	// output is in the log by the time a caller hears of the failure.
	w.logExit(execs, outs, stopped, waitErr)
	for slot, out := range outs {
		execs[slot].done <- out
	}
	w.pool.removed(w)
}

// handle processes one frame from the worker. An error is a protocol
// violation: the worker is killed.
func (w *proc) handle(f *wp.WorkerFrame) error {
	switch m := f.Msg.(type) {
	case *wp.WorkerFrame_ToolStart:
		return w.toolStart(m.ToolStart)
	case *wp.WorkerFrame_Log:
		if es := w.lookup(m.Log.GetSlot(), false); es != nil {
			// The execution's buffer bounds what is kept, whatever the
			// worker sends.
			es.job.Logs.Write(logLevel(m.Log.GetLevel()), m.Log.GetMessage())
		}
		return nil
	case *wp.WorkerFrame_Done:
		return w.done(m.Done)
	case *wp.WorkerFrame_Breach:
		fe := errorFromPB(m.Breach.GetError())
		if fe == nil || (fe.Kind != fault.KindMemoryLimit && fe.Kind != fault.KindCPULimit) {
			return errors.New("breach frame without a limit breach")
		}
		w.mu.Lock()
		if es := w.execs[m.Breach.GetSlot()]; es != nil && es.breach == nil {
			es.breach = fe
			es.breachCPU = nonNegativeDuration(m.Breach.GetCpuTimeNanos())
			es.breachPeak = max(m.Breach.GetPeakMemoryBytes(), fe.Observed, 0)
			if h := w.pool.breachSeen; h != nil {
				h()
			}
			if w.pool.cfg.ExecutionsPerWorker == 1 || fe.Kind == fault.KindMemoryLimit {
				es.breachTimer = time.AfterFunc(breachGrace, func() { w.breachKill(es) })
			}
		}
		w.mu.Unlock()
		return nil
	case *wp.WorkerFrame_Discover:
		return w.discover(m.Discover)
	case *wp.WorkerFrame_Idle:
		// In frame order: every call the worker started before it went
		// idle was started here first.
		if es := w.lookup(m.Idle.GetSlot(), false); es != nil && es.job.Idle != nil {
			es.job.Idle(int(min(m.Idle.GetInflight(), es.calls)), nonNegativeDuration(m.Idle.GetCpuTimeNanos()))
		}
		return nil
	default:
		return errors.New("unexpected frame from the worker")
	}
}

// breachGrace is how long an execution that broke a limit has to stop
// after the worker reported the breach (an interruptible script stops in
// microseconds) before its worker is killed: a built-in goja cannot
// interrupt (JSON.parse of a huge text, a default sort) would otherwise run
// on until the OS refuses memory or the deadline passes, seconds later. A
// worker is retired after a breach anyway, so the kill costs nothing but
// the final CPU and peak figures, which the breach report carries.
const breachGrace = 250 * time.Millisecond

// breachKill kills the worker of an execution that broke a limit and has
// not stopped within breachGrace. With several executions per worker, a
// memory breach is killed too (the memory is shared, and the OS limit
// would end them all later), a CPU breach is left to the deadline.
func (w *proc) breachKill(es *execState) {
	w.mu.Lock()
	running := w.execs[es.slot] == es
	w.mu.Unlock()
	if running {
		w.pool.stats.killed.Add(1)
		w.stop("an execution broke its " + es.breach.Kind.String() + " and did not stop within " + breachGrace.String())
	}
}

func (w *proc) lookup(slot uint64, remove bool) *execState {
	w.mu.Lock()
	defer w.mu.Unlock()
	es := w.execs[slot]
	if remove && es != nil {
		delete(w.execs, slot)
	}
	return es
}

// toolStart starts a tool call through the execution's bridge, in frame
// order, and runs it on its own goroutine (ended by the invocation, which
// the execution's tool context bounds).
func (w *proc) toolStart(m *wp.ToolStart) error {
	es := w.lookup(m.GetSlot(), false)
	if es == nil {
		return nil
	}
	if m.GetCall() != es.calls+1 {
		return fmt.Errorf("tool call %d out of order (expected %d)", m.GetCall(), es.calls+1)
	}
	es.calls++
	inv := es.job.Tools.Start(es.tctx, m.GetTool(), json.RawMessage(m.GetArgumentsJson()))
	es.wg.Add(1)
	es.inflight.Add(1)
	go func() {
		defer es.wg.Done()
		defer es.inflight.Add(-1)
		out, err := inv()
		reply := &wp.ToolReply{Slot: m.GetSlot(), Call: m.GetCall()}
		if err != nil {
			reply.Error = callErrorPB(err)
		} else {
			reply.ResultJson = out
		}
		_ = w.send(&wp.SupervisorFrame{Msg: &wp.SupervisorFrame_ToolReply{ToolReply: reply}})
	}()
	return nil
}

// discover answers tools.$search and tools.$describe from the execution's
// bridge, on the reader's goroutine: a flood of them delays only this
// worker's own frames.
func (w *proc) discover(m *wp.Discover) error {
	es := w.lookup(m.GetSlot(), false)
	if es == nil {
		return nil
	}
	reply := &wp.DiscoverReply{Slot: m.GetSlot(), Id: m.GetId()}
	var v any
	switch r := m.GetRequest().(type) {
	case *wp.Discover_Search:
		v = es.job.Tools.Search(r.Search.GetQuery(), int(r.Search.GetLimit()))
		reply.Found = true
	case *wp.Discover_Describe:
		v, reply.Found = es.job.Tools.Describe(r.Describe)
	default:
		return errors.New("discover frame without a request")
	}
	if reply.Found {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("discover: %w", err)
		}
		reply.ResultJson = b
	}
	return w.send(&wp.SupervisorFrame{Msg: &wp.SupervisorFrame_DiscoverReply{DiscoverReply: reply}})
}

// done ends an execution with the worker's outcome, checked.
func (w *proc) done(m *wp.Done) error {
	es := w.lookup(m.GetSlot(), true)
	if es == nil {
		return fmt.Errorf("done for unknown execution slot %d", m.GetSlot())
	}
	w.mu.Lock()
	if es.breachTimer != nil {
		es.breachTimer.Stop()
	}
	w.mu.Unlock()
	out := &ptcruntime.Outcome{
		Err:             errorFromPB(m.GetError()),
		CPUTime:         nonNegativeDuration(m.GetCpuTimeNanos()),
		PeakMemoryBytes: max(m.GetPeakMemoryBytes(), 0),
	}
	if out.Err == nil {
		if !validResult(m.GetResultJson(), es.job.Limits.MaxOutputBytes) {
			out.Err = fault.New(fault.KindInternal, "the worker returned an invalid result; run the execution again")
		} else {
			out.Result = json.RawMessage(m.GetResultJson())
		}
	}
	if m.GetLogsTruncated() {
		// The worker's buffer (same limits) dropped output: mark ours too.
		es.job.Logs.Truncate()
	}
	es.clean = m.GetClean() && (clean(out) || (es.paused.Load() && out.Err != nil && out.Err.Kind == fault.KindCancelled))
	es.done <- out
	return nil
}
