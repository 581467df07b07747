package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	workerv1 "github.com/ptcrun/ptc/proto/ptc/worker/v1"
	ptcruntime "github.com/ptcrun/ptc/runtime"
)

// workerArg is the argument that starts the binary in worker mode.
const workerArg = "ptc-worker-v1"

// socketFD is the descriptor of the worker's end of its socket.
const socketFD = 3

// IsWorker reports whether this process was started as a ptc worker. A
// binary that hosts a Pool calls it first thing in main:
//
//	if worker.IsWorker() { os.Exit(worker.Main()) }
func IsWorker() bool {
	return len(os.Args) == 2 && os.Args[1] == workerArg
}

// Main runs the worker side of the frame protocol on descriptor 3 until
// the supervisor closes it, and returns the process exit code. It must
// only be called when IsWorker reports true.
func Main() int {
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
		r:         newFrameReader(conn, DefaultMaxFrameBytes),
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

	mu    sync.Mutex
	execs map[uint64]*childExec
	wg    sync.WaitGroup
}

// childExec is one running execution in the worker.
type childExec struct {
	slot   uint64
	cancel context.CancelFunc

	mu      sync.Mutex
	next    uint32
	replies map[uint32]chan *workerv1.ToolReply
}

func (c *child) serve() error {
	var in workerv1.SupervisorFrame
	if err := c.r.read(&in); err != nil {
		return fmt.Errorf("reading init: %w", err)
	}
	init := in.GetInit()
	if init == nil {
		return errors.New("the first frame is not init")
	}
	ready := c.setup(init)
	if err := c.w.write(&workerv1.WorkerFrame{Msg: &workerv1.WorkerFrame_Ready{Ready: ready}}); err != nil {
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
	var in workerv1.SupervisorFrame
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
		case *workerv1.SupervisorFrame_Execute:
			run := c.start(m.Execute)
			if run == nil {
				continue
			}
			c.wg.Add(1)
			go c.readFrames(errc)
			run()
			return
		case *workerv1.SupervisorFrame_ToolReply:
			c.reply(m.ToolReply)
		case *workerv1.SupervisorFrame_Cancel:
			c.mu.Lock()
			if x := c.execs[m.Cancel.GetSlot()]; x != nil {
				x.cancel()
			}
			c.mu.Unlock()
		default:
			errc <- errors.New("unexpected frame from the supervisor")
			return
		}
	}
}

// setup applies the worker's limits and hardening and reports them.
func (c *child) setup(init *workerv1.Init) *workerv1.Ready {
	c.density = int(init.GetExecutionsPerWorker())
	if c.density <= 0 {
		c.density = 1
	}
	c.exec = newExecutor(int(init.GetProgramCache()))
	r := &workerv1.Ready{Pid: int32(os.Getpid())}
	if n := init.GetMemoryLimitBytes(); n > 0 {
		lim := &unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
		if err := unix.Setrlimit(unix.RLIMIT_DATA, lim); err != nil {
			r.RlimitError = err.Error()
		} else {
			c.rlimit = uint64(n)
			r.RlimitDataBytes = n
			// GC harder as the process nears its hard limit.
			debug.SetMemoryLimit(n / 10 * 8)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err == nil {
		v, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		r.NoNewPrivs = v == 1
	}
	r.EnvironmentSize = int32(len(os.Environ()))
	r.InheritedFds = c.inherited
	r.OpenFds = openFDs()
	if pg, err := unix.Getpgid(0); err == nil {
		r.ProcessGroup = int32(pg)
	}
	r.NetNamespace, _ = os.Readlink("/proc/self/ns/net")
	runtime.GC()
	c.baseLive = liveHeap()
	c.vmData.Store(vmData())
	r.BaselineHeapBytes = c.baseLive
	return r
}

// closeInherited closes every descriptor above socketFD that the Go
// runtime did not open itself, and returns them. The runtime opens its
// poller (an eventpoll and an eventfd) and keeps the cgroup CPU quota
// files open before main runs; those are kept.
func closeInherited() []int32 {
	var closed []int32
	for _, fd := range openFDs() {
		if fd <= socketFD || runtimeFD(fd) {
			continue
		}
		if unix.Close(int(fd)) == nil {
			closed = append(closed, fd)
		}
	}
	return closed
}

// runtimeFD reports whether descriptor fd is one the Go runtime opens.
func runtimeFD(fd int32) bool {
	var buf [256]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(int(fd)), buf[:])
	if err != nil {
		return false
	}
	target := string(buf[:n])
	return target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]" ||
		strings.HasPrefix(target, "/sys/fs/cgroup/")
}

// openFDs lists the open descriptors of this process (except the one it
// uses to read the list). It uses raw system calls: an *os.File would start
// the runtime's poller, whose descriptors closeInherited must not close.
func openFDs() []int32 {
	d, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(d)
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.ReadDirent(d, buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	var fds []int32
	for _, name := range names {
		if n, err := strconv.Atoi(name); err == nil && n != d {
			fds = append(fds, int32(n))
		}
	}
	sort.Slice(fds, func(i, j int) bool { return fds[i] < fds[j] })
	return fds
}

// start registers one execution and returns the function that runs it,
// or nil when the worker refused it (and answered with a Done frame).
func (c *child) start(m *workerv1.Execute) func() {
	slot := m.GetSlot()
	lim, err := limitsFromPB(m.GetLimits())
	c.mu.Lock()
	_, dup := c.execs[slot]
	full := len(c.execs) >= c.density
	var x *childExec
	ctx, cancel := context.WithCancel(context.Background())
	if err == nil && !dup && !full {
		x = &childExec{slot: slot, cancel: cancel, replies: map[uint32]chan *workerv1.ToolReply{}}
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
	job := &ptcruntime.Job{
		ExecutionID:   m.GetExecutionId(),
		Language:      m.GetLanguage(),
		Deterministic: m.GetDeterministic(),
		Seed:          m.GetSeed(),
		ClockStart:    time.Unix(0, m.GetClockStartUnixNanos()).UTC(),
		Source:        m.GetSource(),
		Input:         json.RawMessage(m.GetInputJson()),
		Limits:        lim,
		Tools:         &proxyCaller{names: m.GetToolNames(), x: x, w: c.w},
	}
	var logs *ptcruntime.LogBuffer
	if m.GetLogs() {
		max := lim.MaxLogBytes
		if max <= 0 {
			max = 1 << 62
		}
		logs = ptcruntime.NewLogBuffer(time.Now(), max, func(e ptcruntime.LogEntry) {
			_ = c.w.write(&workerv1.WorkerFrame{Msg: &workerv1.WorkerFrame_Log{Log: &workerv1.Log{
				Slot: slot, Entry: &ptcv1.LogEntry{Level: e.Level, Message: e.Message, At: durationpb.New(e.At)}}}})
		})
		job.Logs = logs
	}
	return func() {
		defer cancel()
		restore := c.tightenRlimit(lim.MemoryBytes)
		out := c.exec.run(ctx, job, c.baseLive, c.density > 1, func(fe *fault.Error, cpu time.Duration, peak int64) {
			_ = c.w.write(&workerv1.WorkerFrame{Msg: &workerv1.WorkerFrame_Breach{Breach: &workerv1.Breach{
				Slot: slot, Error: errorPB(fe), CpuTime: durationpb.New(cpu), PeakMemoryBytes: peak}}})
		})
		restore()
		c.mu.Lock()
		delete(c.execs, slot)
		c.mu.Unlock()
		_ = c.w.write(doneFrame(slot, out, logs != nil && logs.Full(), clean(out)))
		// Measured after the reply, off the execution's path, for the
		// next execution's RLIMIT_DATA: after executions that grew the
		// heap, and every vmDataEvery executions.
		if n := c.runs.Add(1); out.PeakMemoryBytes > 8<<20 || n%vmDataEvery == 0 {
			c.vmData.Store(vmData())
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
func (c *child) tightenRlimit(memBytes int64) func() {
	if c.density != 1 || memBytes <= 0 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(c.baseLive + memBytes + memoryLimitSlack)
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

// vmData returns the VmData of this process in bytes (what RLIMIT_DATA
// counts), or 0 when unknown.
func vmData() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return statusField(b, "VmData:")
}

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

func doneFrame(slot uint64, out *ptcruntime.Outcome, logsTruncated, clean bool) *workerv1.WorkerFrame {
	return &workerv1.WorkerFrame{Msg: &workerv1.WorkerFrame_Done{Done: &workerv1.Done{
		Slot:            slot,
		ResultJson:      out.Result,
		Error:           errorPB(out.Err),
		CpuTime:         durationpb.New(out.CPUTime),
		PeakMemoryBytes: out.PeakMemoryBytes,
		LogsTruncated:   logsTruncated,
		Clean:           clean,
	}}}
}

// reply routes a tool result to the call waiting for it.
func (c *child) reply(m *workerv1.ToolReply) {
	c.mu.Lock()
	x := c.execs[m.GetSlot()]
	c.mu.Unlock()
	if x == nil {
		return
	}
	x.mu.Lock()
	ch := x.replies[m.GetCall()]
	delete(x.replies, m.GetCall())
	x.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// proxyCaller is the bridge.Caller of a script in a worker: Start sends a
// ToolStart frame (in call order) and the Invocation waits for the
// supervisor's ToolReply.
type proxyCaller struct {
	names []string
	x     *childExec
	w     *frameWriter
}

// Names returns the callable tool names.
func (p *proxyCaller) Names() []string { return p.names }

// Call is Start followed by its Invocation.
func (p *proxyCaller) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return p.Start(ctx, name, args)()
}

// Start sends the call to the supervisor.
func (p *proxyCaller) Start(ctx context.Context, name string, args json.RawMessage) bridge.Invocation {
	if len(args) > bridge.MaxArgumentBytes {
		// The frame would be refused; answer as the bridge does.
		err := &bridge.CallError{Name: bridge.NameArgumentError, Tool: name, Code: bridge.CodeInvalidArguments,
			Message: fmt.Sprintf("arguments are %d bytes, more than the %d allowed", len(args), bridge.MaxArgumentBytes)}
		return func() (json.RawMessage, error) { return nil, err }
	}
	ch := make(chan *workerv1.ToolReply, 1)
	p.x.mu.Lock()
	p.x.next++
	id := p.x.next
	p.x.replies[id] = ch
	p.x.mu.Unlock()
	err := p.w.write(&workerv1.WorkerFrame{Msg: &workerv1.WorkerFrame_ToolStart{ToolStart: &workerv1.ToolStart{
		Slot: p.x.slot, Call: id, Tool: name, ArgumentsJson: args}}})
	if err != nil {
		p.x.mu.Lock()
		delete(p.x.replies, id)
		p.x.mu.Unlock()
		ce := &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: bridge.CodeToolFailed, Message: "the tool call could not be sent"}
		return func() (json.RawMessage, error) { return nil, ce }
	}
	return func() (json.RawMessage, error) {
		select {
		case r := <-ch:
			if r.GetError() != nil {
				return nil, callErrorFromPB(r.GetError())
			}
			return json.RawMessage(r.GetResultJson()), nil
		case <-ctx.Done():
			p.x.mu.Lock()
			delete(p.x.replies, id)
			p.x.mu.Unlock()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: bridge.CodeTimeout, Message: "the execution's time ran out during the call"}
			}
			return nil, &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: bridge.CodeCancelled, Message: "the call was cancelled"}
		}
	}
}
