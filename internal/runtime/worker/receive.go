package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/ipc"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// The supervisor's side of a worker's frames. A worker is untrusted input:
// every frame is bounded by the reader and checked here, a frame that
// breaks the protocol kills the worker, and what one execution's frames can
// make the supervisor hold is bounded by that execution's limits (its log
// buffer, its call budget).

// readLoop serves the worker's connection until it fails (the worker
// exited or was killed, or broke the protocol), then reaps the process and
// fails the executions it was running. While an execution's goroutine
// waits for its frames it reads them itself (serveExec); this goroutine
// reads what arrives otherwise, so the worker can always write, and
// hands stray frames — of executions that have ended — to stray.
func (w *proc) readLoop() {
	defer w.pool.wg.Done()
	err := w.conn.Serve()
	if err != nil && !errors.Is(err, ipc.ErrPeerClosed) && !errors.Is(err, ipc.ErrClosed) {
		w.stop(stopBroken, "it broke the frame protocol: "+err.Error())
	}
	w.kill()
	waitErr := w.cmd.Wait()
	_ = w.conn.Close()
	defer w.closeClocks()

	w.mu.Lock()
	execs := w.execs
	w.execs = nil
	poolKind, poolMsg := w.poolKillKind, w.poolKillMsg
	w.mu.Unlock()

	// The process is gone: unless the pool killed it (a limit, a
	// deadline, retiring, shrinking, the pool closing), it died. The
	// lifecycle counts which.
	end := w.life.ended()
	if errors.Is(err, ipc.ErrPeerClosed) {
		err = nil
	}
	outs := w.failAll(execs, err, waitErr, poolKind, poolMsg)
	// The record goes out before the outcomes, so that the worker's crash
	// output is in the log by the time a caller hears of the failure.
	w.logExit(execs, outs, end, waitErr)
	for slot, out := range outs {
		execs[slot].done <- out
	}
	w.pool.removed(w)
}

// stray handles a frame no execution's mailbox claimed: one of an
// execution that has ended (dropped), or one that breaks the protocol (an
// error, which stops the worker).
func (w *proc) stray(tag uint64, payload []byte) error {
	var f wp.WorkerFrame
	if err := proto.Unmarshal(payload, &f); err != nil {
		return fmt.Errorf("undecodable frame: %w", err)
	}
	return w.handle(tag, &f)
}

// handle processes one frame from the worker, sent with tag: on the
// goroutine of the execution it belongs to (serveExec) or, for a frame of
// no running execution, on whichever goroutine reads. An error is a
// protocol violation: the worker is killed. A Done frame delivers the
// execution's outcome to es.done.
func (w *proc) handle(tag uint64, f *wp.WorkerFrame) error {
	if s, ok := frameSlot(f); ok && s != tag {
		return fmt.Errorf("a frame for execution %d sent as %d", s, tag)
	}
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
		// A guest the engine stopped for a protocol breach or its output
		// limit, and which computes on, is reported too (python.go).
		guestStop := fe != nil && (fe.Kind == fault.KindScript || fe.Kind == fault.KindOutputLimit)
		if fe == nil || (fe.Kind != fault.KindMemoryLimit && fe.Kind != fault.KindCPULimit && !guestStop) {
			return errors.New("breach frame without a limit breach")
		}
		w.mu.Lock()
		es := w.execs[m.Breach.GetSlot()]
		if es != nil && guestStop && !es.wasm {
			w.mu.Unlock()
			return errors.New("breach frame without a limit breach (a script error reported for a JavaScript execution)")
		}
		if es != nil && es.breach == nil {
			es.breach = fe
			es.breachCPU = nonNegativeDuration(m.Breach.GetCpuTimeNanos())
			es.breachPeak = max(m.Breach.GetPeakMemoryBytes(), 0)
			if fe.Kind == fault.KindMemoryLimit {
				// Only a memory breach observes bytes; a CPU breach
				// observes nanoseconds.
				es.breachPeak = max(es.breachPeak, fe.Observed)
			}
			if h := w.pool.breachSeen; h != nil {
				h()
			}
			if w.pool.cfg.ExecutionsPerWorker == 1 || fe.Kind == fault.KindMemoryLimit {
				es.breachTimer = time.AfterFunc(w.pool.cfg.breachGraceOrDefault(), func() { w.breachKill(es) })
			}
		} else if es != nil {
			// The supervisor's own watch saw the breach first (a guest's
			// CPU on its lane's clock), without the memory the worker
			// knows: the worker's report adds it.
			es.breachPeak = max(es.breachPeak, m.Breach.GetPeakMemoryBytes())
		}
		w.mu.Unlock()
		if es != nil && es.wasm {
			// A guest runs without loop checks: nothing but the end of
			// its worker stops it.
			w.stop(stopLimit, "a WebAssembly guest broke its "+fe.Kind.String())
		}
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

// frameSlot returns the execution slot a frame names.
func frameSlot(f *wp.WorkerFrame) (uint64, bool) {
	switch m := f.Msg.(type) {
	case *wp.WorkerFrame_ToolStart:
		return m.ToolStart.GetSlot(), true
	case *wp.WorkerFrame_Log:
		return m.Log.GetSlot(), true
	case *wp.WorkerFrame_Done:
		return m.Done.GetSlot(), true
	case *wp.WorkerFrame_Breach:
		return m.Breach.GetSlot(), true
	case *wp.WorkerFrame_Discover:
		return m.Discover.GetSlot(), true
	case *wp.WorkerFrame_Idle:
		return m.Idle.GetSlot(), true
	case *wp.WorkerFrame_Compiled:
		return m.Compiled.GetSlot(), true
	}
	return 0, false
}

// defaultBreachGrace is how long an execution that broke a limit has to stop
// after the worker reported the breach (an interruptible script stops in
// microseconds) before its worker is killed: a built-in goja cannot
// interrupt (JSON.parse of a huge text, a default sort) would otherwise run
// on until the OS refuses memory or the deadline passes, seconds later. A
// worker is retired after a breach anyway, so the kill costs nothing but
// the final CPU and peak figures, which the breach report carries.
const defaultBreachGrace = 250 * time.Millisecond

// breachKill kills the worker of an execution that broke a limit and has
// not stopped within the breach grace. With several executions per worker, a
// memory breach is killed too (the memory is shared, and the OS limit
// would end them all later), a CPU breach is left to the deadline.
func (w *proc) breachKill(es *execState) {
	w.mu.Lock()
	running := w.execs[es.slot] == es
	w.mu.Unlock()
	if running {
		w.stop(stopLimit, "an execution broke its "+es.breach.Kind.String()+" and did not stop within "+w.pool.cfg.breachGraceOrDefault().String())
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
// order. A call to an inline tool that the script waits on alone (as the
// worker tells) and that can run at once (a concurrency slot is free)
// runs right here, on the goroutine that read its frame, and its answer
// is queued: one call costs no goroutine hand-off, as in-process the
// engine runs such a call on the script's goroutine. Calls made together
// run concurrently, as in-process: an inline tool may wait (a Session's
// client tool waits for its client). Any other call runs on its own
// goroutine (ended by the invocation, which the execution's tool context
// bounds), which this goroutine lets start at once.
func (w *proc) toolStart(m *wp.ToolStart) error {
	es := w.lookup(m.GetSlot(), false)
	if es == nil {
		return nil
	}
	if m.GetCall() != es.calls+1 {
		return fmt.Errorf("tool call %d out of order (expected %d)", m.GetCall(), es.calls+1)
	}
	es.calls++
	slot, call := m.GetSlot(), m.GetCall()
	inv, now := es.job.Tools.StartNow(es.tctx, m.GetTool(), json.RawMessage(m.GetArgumentsJson()))
	if now && m.GetAlone() && es.job.Tools.Inline(m.GetTool()) {
		out, err := inv()
		return w.queue(es.lane, toolReply(slot, call, out, err))
	}
	es.wg.Add(1)
	es.inflight.Add(1)
	go func() {
		defer es.wg.Done()
		defer es.inflight.Add(-1)
		out, err := inv()
		_ = w.send(es.lane, toolReply(slot, call, out, err))
	}()
	// Let the call's goroutine start on this thread, which is about to
	// block reading the connection (a goroutine readied by a thread that
	// then blocks in a system call waits for another thread to be woken).
	runtime.Gosched()
	return nil
}

// toolReply is the frame answering a tool call.
func toolReply(slot uint64, call uint32, out json.RawMessage, err error) *wp.SupervisorFrame {
	reply := &wp.ToolReply{Slot: slot, Call: call}
	if err != nil {
		reply.Error = callErrorPB(err)
	} else {
		reply.ResultJson = out
	}
	return &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_ToolReply{ToolReply: reply}}
}

// discover answers tools.$search and tools.$describe from the execution's
// bridge, on the goroutine that read the frame: a flood of them delays
// only this worker's own frames.
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
	return w.queue(es.lane, &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_DiscoverReply{DiscoverReply: reply}})
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
	es.unknownModule = m.GetUnknownModule()
	if m.GetLogsTruncated() {
		// The worker's buffer (same limits) dropped output: mark ours too.
		es.job.Logs.Truncate()
	}
	es.clean = m.GetClean() && (clean(out) || (es.paused.Load() && out.Err != nil && out.Err.Kind == fault.KindCancelled))
	es.done <- out
	return nil
}
