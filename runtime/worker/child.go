package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	wp "github.com/ptcrun/ptc/internal/workerproto"
	ptcruntime "github.com/ptcrun/ptc/runtime"
)

// The worker process's side: its main, the frames it reads, and each
// execution it runs. Its hardening is in harden.go, its tool bridge in
// proxy.go.

// workerArg is the argument that starts the binary in worker mode.
const workerArg = "ptc-worker-v1"

// socketFD is the descriptor of the worker's end of its socket.
const socketFD = 3

// Main runs the worker side of the frame protocol when this process was
// started as a ptc worker: it serves descriptor 3 until the supervisor
// closes it and returns the process exit code and true. In any other
// process it returns at once, with false. A binary that hosts a Pool calls
// it first thing in main (ptc.RunWorker does):
//
//	if code, ok := worker.Main(); ok { os.Exit(code) }
func Main() (code int, ok bool) {
	if len(os.Args) != 2 || os.Args[1] != workerArg {
		return 0, false
	}
	return serveWorker(), true
}

// serveWorker is the worker process's main.
func serveWorker() int {
	// Close every descriptor beyond the socket before the runtime opens
	// its own: a supervisor may hold descriptors without close-on-exec
	// that it inherited itself.
	inherited := closeInherited()
	f := os.NewFile(socketFD, "ptc-worker-socket")
	if f == nil {
		fmt.Fprintln(os.Stderr, "ptc worker: descriptor 3 is not open; workers are started by a worker.Pool")
		return 2
	}
	conn, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ptc worker: descriptor 3 is not a socket:", err)
		return 2
	}
	defer conn.Close()
	c := &child{
		r:         newFrameReader(conn, defaultMaxFrameBytes),
		w:         newFrameWriter(conn),
		execs:     map[uint64]*childExec{},
		inherited: inherited,
	}
	if err := c.serve(); err != nil {
		fmt.Fprintln(os.Stderr, "ptc worker:", err)
		return 1
	}
	return 0
}

// child is the worker side of one connection.
type child struct {
	r        *frameReader
	w        *frameWriter
	exec     *executor
	density  int
	rlimit   uint64
	baseLive int64
	// vmData is the VmData measured after a recent execution; runs counts
	// executions.
	vmData atomic.Int64
	runs   atomic.Int64
	// inherited lists the descriptors found open (and closed) at start.
	inherited []int32
	// status reads /proc/self/status after the lockdown.
	status *procStatus
	// settle orders the clean-up after an execution before the next one.
	settle settler

	mu    sync.Mutex
	execs map[uint64]*childExec
	wg    sync.WaitGroup
}

func (c *child) serve() error {
	var in wp.SupervisorFrame
	if err := c.r.read(&in); err != nil {
		return fmt.Errorf("reading init: %w", err)
	}
	init := in.GetInit()
	if init == nil {
		return errors.New("the first frame is not init")
	}
	ready := c.setup(init)
	if err := c.w.write(&wp.WorkerFrame{Msg: &wp.WorkerFrame_Ready{Ready: ready}}); err != nil {
		return err
	}
	// Frames are read by one goroutine at a time: the reader that gets an
	// Execute frame starts a new reader and runs the execution itself
	// (see readFrames). Every goroutine ends once its context is
	// cancelled and its Done frame is written (or the write fails); serve
	// waits for them after the socket closes.
	errc := make(chan error, 1)
	c.wg.Add(1)
	go c.readFrames(errc)
	err := <-errc
	c.mu.Lock()
	for _, x := range c.execs {
		x.cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
	return err
}

// readFrames reads frames until it gets an Execute frame; it then hands
// reading over to a new goroutine and runs the execution on this one, so
// that the execution starts at once, on a goroutine the scheduler already
// runs, rather than waiting for another thread to pick it up. The first
// read error (nil for a clean end) goes to errc.
func (c *child) readFrames(errc chan<- error) {
	defer c.wg.Done()
	var in wp.SupervisorFrame
	for {
		if err := c.r.read(&in); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				err = nil
			} else {
				err = fmt.Errorf("reading frame: %w", err)
			}
			errc <- err
			return
		}
		switch m := in.Msg.(type) {
		case *wp.SupervisorFrame_Execute:
			run := c.start(m.Execute)
			if run == nil {
				continue
			}
			c.wg.Add(1)
			go c.readFrames(errc)
			run()
			return
		case *wp.SupervisorFrame_ToolReply:
			if x := c.lookup(m.ToolReply.GetSlot()); x != nil {
				x.deliverReply(m.ToolReply)
			}
		case *wp.SupervisorFrame_DiscoverReply:
			if x := c.lookup(m.DiscoverReply.GetSlot()); x != nil {
				x.deliverDiscovery(m.DiscoverReply)
			}
		case *wp.SupervisorFrame_Cancel:
			if x := c.lookup(m.Cancel.GetSlot()); x != nil {
				if m.Cancel.GetPause() {
					x.paused.Store(true)
				}
				x.cancel()
			}
		default:
			errc <- errors.New("unexpected frame from the supervisor")
			return
		}
	}
}

func (c *child) lookup(slot uint64) *childExec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.execs[slot]
}

// start registers one execution and returns the function that runs it,
// or nil when the worker refused it (and answered with a Done frame).
func (c *child) start(m *wp.Execute) func() {
	slot := m.GetSlot()
	job, err := jobOf(m)
	c.mu.Lock()
	_, dup := c.execs[slot]
	full := len(c.execs) >= c.density
	var x *childExec
	ctx, cancel := context.WithCancel(context.Background())
	if err == nil && !dup && !full {
		x = newChildExec(ctx, slot, cancel, c.w, m.GetTools())
		c.execs[slot] = x
	}
	c.mu.Unlock()
	if x == nil {
		cancel()
		msg := "the worker refused the execution: "
		switch {
		case err != nil:
			msg += err.Error()
		case dup:
			msg += "slot already in use"
		default:
			msg += "worker is full"
		}
		_ = c.w.write(doneFrame(slot, &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "%s", msg)}, false, false))
		return nil
	}
	job.Tools = x
	if m.GetResumable() {
		job.Idle = func(inflight int, cpu time.Duration) {
			_ = c.w.write(&wp.WorkerFrame{Msg: &wp.WorkerFrame_Idle{Idle: &wp.Idle{
				Slot: slot, Inflight: uint32(max(inflight, 0)), CpuTimeNanos: int64(cpu)}}})
		}
	}
	var logs *ptcruntime.LogBuffer
	if m.GetLogs() {
		logs = ptcruntime.NewLogBuffer(time.Now(), job.Limits, func(e core.LogEntry) {
			_ = c.w.write(&wp.WorkerFrame{Msg: &wp.WorkerFrame_Log{Log: &wp.Log{
				Slot: slot, Level: e.Level, Message: e.Message, AtNanos: int64(e.At)}}})
		})
		job.Logs = logs
	}
	return func() {
		defer cancel()
		base := c.begin()
		restore := c.tightenRlimit(base, job.Limits.MemoryBytes)
		out := c.exec.run(ctx, job, base, c.density > 1, func(fe *fault.Error, cpu time.Duration, peak int64) {
			_ = c.w.write(&wp.WorkerFrame{Msg: &wp.WorkerFrame_Breach{Breach: &wp.Breach{
				Slot: slot, Error: errorPB(fe), CpuTimeNanos: int64(cpu), PeakMemoryBytes: peak}}})
		})
		restore()
		c.mu.Lock()
		delete(c.execs, slot)
		c.mu.Unlock()
		// An execution stopped because it paused was idle: the worker is
		// as clean as after a script that ended.
		ok := clean(out) || (x.paused.Load() && out.Err != nil && out.Err.Kind == fault.KindCancelled)
		c.end(out, func() { _ = c.w.write(doneFrame(slot, out, logs != nil && logs.Full(), ok)) })
		// Measured after the reply, off the execution's path, for the
		// next execution's RLIMIT_DATA: after executions that grew the
		// heap, and every vmDataEvery executions.
		if n := c.runs.Add(1); out.PeakMemoryBytes > 8<<20 || n%vmDataEvery == 0 {
			c.vmData.Store(c.status.vmData())
		}
	}
}

// tightenRlimit sets the limits of one execution when the worker runs
// one execution at a time: the Go soft memory limit near the execution's
// limit (so the GC, and the watchdog after it, notice growth early), and
// the RLIMIT_DATA soft limit to the data segment in use now plus twice the
// execution's memory limit (one allocation may overshoot the watchdog by
// its own size) plus rlimitSlack. The returned function restores the
// worker's limits. Under the race detector RLIMIT_DATA stays as it is.
func (c *child) tightenRlimit(baseLive, memBytes int64) func() {
	if c.density != 1 || memBytes <= 0 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(baseLive + memBytes + memoryLimitSlack)
	restore := func() { debug.SetMemoryLimit(prev) }
	if c.rlimit == 0 || raceEnabled {
		return restore
	}
	used := c.vmData.Load()
	soft := uint64(used) + 2*uint64(memBytes) + rlimitSlack
	if used <= 0 || soft >= c.rlimit {
		return restore
	}
	if unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: soft, Max: c.rlimit}) != nil {
		return restore
	}
	return func() {
		restore()
		_ = unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: c.rlimit, Max: c.rlimit})
	}
}

// vmDataEvery is how often (in executions) the worker re-reads its VmData
// when its heap did not grow much.
const vmDataEvery = 16

const (
	// rlimitSlack is the room above twice the memory limit that the
	// per-execution RLIMIT_DATA leaves for the Go runtime (arenas are
	// mapped 64 MiB at a time, goroutine stacks, the watchdog's GC).
	rlimitSlack = 192 << 20
	// memoryLimitSlack is added to the Go soft memory limit so that the
	// GC works hard only once the script nears its own limit.
	memoryLimitSlack = 16 << 20
)

// clean reports whether a worker may run more executions after out: not
// after a limit breach, a kill or an internal error.
func clean(out *ptcruntime.Outcome) bool {
	if out.Err == nil {
		return true
	}
	switch out.Err.Kind {
	case fault.KindSyntax, fault.KindScript, fault.KindToolCallLimit, fault.KindOutputLimit, fault.KindResultSchema:
		return true
	}
	return false
}

func doneFrame(slot uint64, out *ptcruntime.Outcome, logsTruncated, clean bool) *wp.WorkerFrame {
	return &wp.WorkerFrame{Msg: &wp.WorkerFrame_Done{Done: &wp.Done{
		Slot:            slot,
		ResultJson:      out.Result,
		Error:           errorPB(out.Err),
		CpuTimeNanos:    int64(out.CPUTime),
		PeakMemoryBytes: out.PeakMemoryBytes,
		LogsTruncated:   logsTruncated,
		Clean:           clean,
	}}}
}
