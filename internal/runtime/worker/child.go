package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/ipc"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// The worker process's side: its main, the frames it reads, and its
// lanes, each running one execution at a time (lane.go). Its hardening is
// in harden.go, its tool bridge in proxy.go.

// workerArg is the argument that starts the binary in worker mode.
const workerArg = "ptc-worker-v2"

// The worker's ends of its pipes: it reads frames from readFD and writes
// them to writeFD.
const (
	readFD  = 3
	writeFD = 4
)

// Main runs the worker side of the frame protocol when this process was
// started as a ptc worker: it serves descriptors 3 and 4 until the
// supervisor closes them and returns the process exit code and true. In
// any other process it returns at once, with false. A worker whose parent
// is no longer the supervisor that started it returns at once, with exit
// code 2: it dies with its supervisor (lineage.go). A binary that hosts a
// Pool calls it first thing in main (ptc.RunWorker does):
//
//	if code, ok := worker.Main(); ok { os.Exit(code) }
func Main() (code int, ok bool) {
	if len(os.Args) != 2 || os.Args[1] != workerArg {
		return 0, false
	}
	if err := checkSupervisor(); err != nil {
		fmt.Fprintln(os.Stderr, "ptc worker:", err)
		return 2, true
	}
	return serveWorker(), true
}

// serveWorker is the worker process's main.
func serveWorker() int {
	// Close every descriptor beyond the pipes before the runtime opens
	// its own: a supervisor may hold descriptors without close-on-exec
	// that it inherited itself.
	inherited := closeInherited()
	c := &child{inherited: inherited}
	// The supervisor is trusted: what it sends a lane is bounded by the
	// execution's own limits, so mailboxes are not bounded here.
	conn, err := ipc.New(readFD, writeFD, ipc.Options{MaxFrameBytes: defaultMaxFrameBytes, MaxMailboxBytes: -1, Handler: c.handle})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ptc worker: descriptors 3 and 4 are not the pipes of a worker.Pool:", err)
		return 2
	}
	defer conn.Close()
	c.conn = conn
	if err := c.serve(); err != nil {
		fmt.Fprintln(os.Stderr, "ptc worker:", err)
		return 1
	}
	return 0
}

// child is the worker side of one connection.
type child struct {
	conn     *ipc.Conn
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
	// wasm is the WebAssembly engine, made on the first WebAssembly
	// execution with wasmCfg (from Init).
	wasmCfg  wasm.Config
	wasmOnce sync.Once
	wasm     *wasm.Engine
	wasmErr  error
	// python is the Python engine, made by the first Compile frame that
	// carries the interpreter (python.go).
	python pyEngine
	// status reads /proc/self/status after the lockdown.
	status *procStatus
	// settle orders the clean-up after an execution before the next one.
	settle settler

	// lanes[i] runs the executions sent to lane i+1; stock holds the
	// runtimes the warmer made for them, refill wakes the warmer.
	lanes  []*lane
	stock  chan *warmRuntime
	refill chan struct{}
	wg     sync.WaitGroup
}

func (c *child) serve() error {
	mb, err := c.conn.Mailbox(controlTag)
	if err != nil {
		return err
	}
	var in wp.SupervisorFrame
	err = mb.Next(context.Background(), func(b []byte) error { return proto.Unmarshal(b, &in) })
	mb.Close()
	if err != nil {
		return fmt.Errorf("reading init: %w", err)
	}
	init := in.GetInit()
	if init == nil {
		return errors.New("the first frame is not init")
	}
	reserveThreads(runtime.GOMAXPROCS(0) + int(init.GetExecutionsPerWorker()) + 2)
	if w := init.GetWasm(); w != nil {
		c.wasmCfg = wasm.Config{RealClock: w.GetRealClock(), RealRandom: w.GetRealRandom(), MaxModules: int(w.GetMaxModules()),
			MaxModuleBytes: int(w.GetMaxModuleBytes()), MaxMemory: w.GetMaxMemoryBytes(), Bounds: boundsOf(w.GetBounds())}
	}
	ready := c.setup(init)
	// The lanes' mailboxes exist before the supervisor can send anything
	// to them. Each lane goroutine makes its next runtime ahead and then
	// reads its own frames; it ends when the connection does.
	for i := 1; i <= c.density; i++ {
		l, err := c.newLane(uint64(i))
		if err != nil {
			return err
		}
		c.lanes = append(c.lanes, l)
	}
	c.stock, c.refill = make(chan *warmRuntime, warmStock), make(chan struct{}, 1)
	done := make(chan struct{})
	c.wg.Add(1)
	go c.warmer(done)
	for _, l := range c.lanes {
		c.wg.Add(1)
		go l.run()
	}
	for _, l := range c.lanes {
		ready.LaneThreads = append(ready.LaneThreads, <-l.thread)
	}
	if err := sendFrame(c.conn, controlTag, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Ready{Ready: ready}}, false); err != nil {
		return err
	}
	// This goroutine reads whatever arrives while no lane reads (a lane
	// computing leaves the connection to it): Cancel frames at once, and
	// the answers a lane will read when it next waits.
	err = c.conn.Serve()
	for _, l := range c.lanes {
		l.cancelCurrent()
	}
	close(done)
	_ = c.conn.Close()
	c.wg.Wait()
	if errors.Is(err, ipc.ErrPeerClosed) || errors.Is(err, ipc.ErrClosed) {
		err = nil
	}
	return err
}

// reserveThreads makes the Go runtime start n threads now, which it then
// keeps idle, so that it need not start one while an execution holds the
// worker near its memory limit. A worker's goroutines block in system
// calls on their own threads (its lanes and its Serve wait in poll), so
// its timers, its watchdog and the collector run on further threads; a
// thread started when RLIMIT_DATA leaves no room for its stack fails, and
// the Go runtime aborts the worker (an INTERNAL death instead of
// MEMORY_LIMIT). Started here, their stacks are part of the data segment
// the per-execution limit is measured from.
func reserveThreads(n int) {
	// n goroutines locked to their threads at once hold n threads; once
	// unlocked, the threads return to the runtime's idle list.
	var locked, done sync.WaitGroup
	release := make(chan struct{})
	for range n {
		locked.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			locked.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	close(release)
	done.Wait()
}

// handle handles a frame no lane's mailbox claimed: a Cancel, or a frame
// for a lane that does not exist.
func (c *child) handle(tag uint64, payload []byte) error {
	var in wp.SupervisorFrame
	if err := proto.Unmarshal(payload, &in); err != nil {
		return fmt.Errorf("undecodable frame: %w", err)
	}
	switch m := in.Msg.(type) {
	case *wp.SupervisorFrame_Cancel:
		if tag&cancelBit != 0 {
			if l := c.lane(tag &^ cancelBit); l != nil {
				l.cancelSlot(m.Cancel.GetSlot(), m.Cancel.GetPause())
			}
		}
		return nil
	case *wp.SupervisorFrame_Execute:
		// No such lane: refuse the execution, as a full worker would.
		return sendFrame(c.conn, m.Execute.GetSlot(), refusal(m.Execute.GetSlot(), "worker is full"), false)
	}
	return errors.New("unexpected frame from the supervisor")
}

// lane returns lane id, nil if there is none.
func (c *child) lane(id uint64) *lane {
	if id < 1 || id > uint64(len(c.lanes)) {
		return nil
	}
	return c.lanes[id-1]
}

// refusal is the Done frame of an execution the worker will not run.
func refusal(slot uint64, why string) *wp.WorkerFrame {
	return doneFrame(slot, &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "the worker refused the execution: %s", why)}, false, false)
}

// tightenLimits sets the limits of one execution when the worker runs
// one execution at a time: the Go soft memory limit near the execution's
// limit (so the GC, and the watchdog after it, notice growth early; the
// GC target is executionGCPercent for the worker's whole life, see
// setup), and the RLIMIT_DATA soft limit to the data segment in use now
// plus twice the execution's memory limit (one allocation may overshoot
// the watchdog by its own size) plus rlimitSlack. The returned function
// restores the worker's limits. Under the race detector RLIMIT_DATA stays
// as it is. A WebAssembly guest (guest) gets no soft memory limit: its
// memory is the engine's to bound, and the worker's heap then holds
// compiled modules the idle baseline does not count — a limit below them
// would keep the collector running, each cycle waiting for the guest to
// call the host.
func (c *child) tightenLimits(baseLive, memBytes int64, guest bool) func() {
	if c.density != 1 || memBytes <= 0 {
		return func() {}
	}
	prev := int64(-1)
	if !guest {
		prev = debug.SetMemoryLimit(baseLive + memBytes + memoryLimitSlack)
	}
	prevStack := debug.SetMaxStack(stackBound(memBytes))
	restore := func() {
		if prev >= 0 {
			debug.SetMemoryLimit(prev)
		}
		debug.SetMaxStack(prevStack)
	}
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

// boundCompile lowers the worker's RLIMIT_DATA soft limit, while it
// compiles a module, to its data segment now plus the compile memory
// bound (wasm.Bounds.CompileMemoryBytes): a module whose compilation
// needs more makes the Go runtime fail an allocation, which ends the
// worker, and the supervisor reports the module over the compile limit.
// As for executions, only a worker that runs one execution at a time is
// narrowed (with more, a compile would take its neighbours' room), and
// not under the race detector. The returned function restores the limit.
func (c *child) boundCompile() func() {
	lim := c.wasmCfg.WithDefaults().Bounds.CompileMemoryBytes
	if c.density != 1 || c.rlimit == 0 || raceEnabled || lim <= 0 {
		return func() {}
	}
	used := c.status.vmData()
	soft := uint64(used) + uint64(lim)
	if used <= 0 || soft >= c.rlimit {
		return func() {}
	}
	if unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: soft, Max: c.rlimit}) != nil {
		return func() {}
	}
	return func() { _ = unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: c.rlimit, Max: c.rlimit}) }
}

// vmDataEvery is how often (in executions) the worker re-reads its VmData
// when its heap did not grow much.
const vmDataEvery = 16

// executionGCPercent is the GC target of a worker that runs one execution
// at a time. A worker's idle heap is small (a few MiB), so at the default
// (100) an execution that decodes tool results collects every few MiB;
// the soft memory limit set for each execution (tightenLimits) still
// starts a collection as the heap nears the execution's limit, and the
// process's own soft limit (setup) as it nears RLIMIT_DATA. The target
// stays between executions: put back to 100 after each one, it started a
// collection whose marking ran beside the next execution when executions
// came back to back (a third of a 100-call execution's median time on an
// idle 2-vCPU host).
const executionGCPercent = 400

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
