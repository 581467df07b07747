package worker

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/ipc"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// lane is one execution slot of a worker: a goroutine locked to its OS
// thread (whose CPU clock measures the scripts it runs) that runs the
// executions sent to it one after another. It reads its own frames —
// the Execute frame, then the answers to its execution's calls — from its
// mailbox, so a frame goes from the read system call to the goroutine
// that needs it with no hand-off between threads. Each execution runs in
// a runtime the worker's warmer made ahead (a fresh runtime per
// execution; only its making moves off the path).
type lane struct {
	c  *child
	id uint64
	mb *ipc.Mailbox

	// mu guards what the connection's Handler reads on another thread:
	// the execution running now (its slot and cancel function), the last
	// slot started, and a Cancel that arrived before its Execute was read;
	// paused is set when the execution was stopped because it paused.
	mu        sync.Mutex
	cur       uint64
	cancel    context.CancelFunc
	last      uint64
	cancelled uint64
	paused    bool
	// cancelledPause is paused for the Cancel of slot cancelled.
	cancelledPause bool

	// thread receives the id of the lane's thread once it is locked.
	thread chan int32
}

func (c *child) newLane(id uint64) (*lane, error) {
	mb, err := c.conn.Mailbox(id)
	if err != nil {
		return nil, err
	}
	return &lane{c: c, id: id, mb: mb, thread: make(chan int32, 1)}, nil
}

// run is the lane's goroutine. It ends when the connection does.
func (l *lane) run() {
	defer l.c.wg.Done()
	// Locked for good: the thread's CPU clock is the scripts' CPU time,
	// and the runtime made ahead is used on the same thread. The thread
	// ends with the goroutine.
	runtime.LockOSThread()
	l.thread <- int32(unix.Gettid())
	var in wp.SupervisorFrame
	decode := func(b []byte) error {
		proto.Reset(&in)
		return proto.Unmarshal(b, &in)
	}
	for {
		if err := l.mb.Next(context.Background(), decode); err != nil {
			// The connection ended (or the supervisor sent what cannot
			// be decoded, which ends it).
			_ = l.c.conn.Close()
			return
		}
		if c := in.GetCompile(); c != nil {
			if c.GetPython() {
				l.compilePython(c)
			} else {
				l.compile(c)
			}
			continue
		}
		m := in.GetExecute()
		if m == nil {
			// An answer to an execution that has ended.
			continue
		}
		var warm *warmRuntime
		if lang := m.GetLanguage(); lang != wp.Language_LANGUAGE_WASM && lang != wp.Language_LANGUAGE_PYTHON {
			warm = l.c.takeWarm()
		}
		l.execute(m, warm)
	}
}

// compile compiles a WebAssembly module for the execution that follows,
// and answers with its hash or why it failed.
func (l *lane) compile(m *wp.Compile) {
	r := &wp.Compiled{Slot: m.GetSlot()}
	eng, err := l.c.wasmEngine()
	if err == nil {
		restore := l.c.boundCompile()
		r.ModuleSha256, err = eng.Compile(context.Background(), m.GetModule())
		restore()
	}
	if err != nil {
		r.Error, r.Invalid = err.Error(), errors.Is(err, wasm.ErrInvalidModule)
	}
	// Compiling grows the data segment: measured again for the next
	// execution's RLIMIT_DATA, off its path.
	l.c.vmData.Store(l.c.status.vmData())
	_ = sendFrame(l.c.conn, m.GetSlot(), &wp.WorkerFrame{Msg: &wp.WorkerFrame_Compiled{Compiled: r}}, false)
}

// cancelSlot cancels execution slot if it runs on the lane now, or
// remembers the cancel if its Execute frame was not read yet; pause means
// the execution is stopped because it paused (waiting with nothing to
// run), which leaves the worker clean.
func (l *lane) cancelSlot(slot uint64, pause bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case slot == l.cur && l.cancel != nil:
		l.paused = l.paused || pause
		l.cancel()
	case slot > l.last:
		l.cancelled, l.cancelledPause = slot, pause
	}
}

// cancelCurrent cancels the execution running on the lane, if any.
func (l *lane) cancelCurrent() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel()
	}
}

// execute runs one execution on the lane's goroutine and sends its Done
// frame; warm is the runtime made for it ahead (nil: make one now).
func (l *lane) execute(m *wp.Execute, warm *warmRuntime) {
	c := l.c
	slot := m.GetSlot()
	job, err := jobOf(m)
	if err != nil {
		_ = sendFrame(c.conn, slot, refusal(slot, err.Error()), false)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.mu.Lock()
	l.cur, l.cancel, l.last, l.paused = slot, cancel, slot, false
	if l.cancelled == slot {
		l.paused = l.cancelledPause
		cancel()
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.cur, l.cancel = 0, nil
		l.mu.Unlock()
	}()

	x := newChildExec(ctx, slot, l, m.GetTools())
	job.Tools = x
	if m.GetResumable() {
		job.Idle = func(inflight int, cpu time.Duration) {
			_ = sendFrame(c.conn, slot, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Idle{Idle: &wp.Idle{
				Slot: slot, Inflight: uint32(max(inflight, 0)), CpuTimeNanos: int64(cpu)}}}, false)
		}
	}
	var logs *ptcruntime.LogBuffer
	if m.GetLogs() {
		logs = ptcruntime.NewLogBuffer(time.Now(), job.Limits, func(e core.LogEntry) {
			_ = sendFrame(c.conn, slot, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Log{Log: &wp.Log{
				Slot: slot, Level: e.Level, Message: e.Message, AtNanos: int64(e.At)}}}, false)
		})
		job.Logs = logs
	}
	base := c.begin()
	restore := c.tightenLimits(base, job.Limits.MemoryBytes, job.Language == core.LanguageWASM || job.Language == core.LanguagePython)
	onBreach := func(fe *fault.Error, cpu time.Duration, peak int64) {
		_ = sendFrame(c.conn, slot, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Breach{Breach: &wp.Breach{
			Slot: slot, Error: errorPB(fe), CpuTimeNanos: int64(cpu), PeakMemoryBytes: peak}}}, false)
	}
	var out *ptcruntime.Outcome
	unknown := false
	switch job.Language {
	case core.LanguagePython:
		out, unknown = c.exec.runPython(ctx, c.python.get(job.ModuleSHA256), job, onBreach, l.mb.SpinCPU)
	case core.LanguageWASM:
		if eng, err := c.wasmEngine(); err != nil {
			out = &ptcruntime.Outcome{Err: fault.Wrap(fault.KindInternal, err, "the worker's WebAssembly engine is unavailable")}
		} else {
			out, unknown = c.exec.runWASM(ctx, eng, job, base, c.density > 1, onBreach, l.mb.SpinCPU)
		}
	default:
		out = c.exec.run(ctx, job, base, c.density > 1, onBreach, l.mb.SpinCPU, warm)
	}
	x.release()
	// An execution stopped because it paused was idle: the worker is as
	// clean as after a script that ended.
	l.mu.Lock()
	paused := l.paused
	l.mu.Unlock()
	ok := clean(out) || (paused && out.Err != nil && out.Err.Kind == fault.KindCancelled)
	done := doneFrame(slot, out, logs != nil && logs.Full(), ok)
	done.GetDone().UnknownModule = unknown
	// After a large execution the worker gives its memory back before
	// the next one begins (settle.go).
	c.end(out, func() { _ = sendFrame(c.conn, slot, done, false) })
	// After the Done: a collection the restored soft limit starts is off
	// the execution's path, and so is the one rest arms.
	restore()
	c.rest()
	c.refillWarm()
	// Measured after the reply, off the execution's path, for the next
	// execution's RLIMIT_DATA: after executions that grew the heap, and
	// every vmDataEvery executions.
	if n := c.runs.Add(1); out.PeakMemoryBytes > 8<<20 || n%vmDataEvery == 0 {
		c.vmData.Store(c.status.vmData())
	}
}

// warmStock is how many runtimes the warmer keeps made ahead.
const warmStock = 2

// warmer makes JavaScript runtimes ahead of the executions that will run
// in them, on its own goroutine, until warmStock are ready; it starts
// again when a lane has sent an execution's Done (refill), so that making
// the next runtime overlaps the supervisor's handling of that result and
// not the execution itself. It ends when done is closed.
func (c *child) warmer(done <-chan struct{}) {
	defer c.wg.Done()
	for {
		for len(c.stock) < cap(c.stock) {
			w := c.exec.warm()
			if w == nil {
				return
			}
			select {
			case c.stock <- w:
			default:
				// Full meanwhile: keep it for later.
			}
		}
		select {
		case <-c.refill:
		case <-done:
			return
		}
	}
}

// takeWarm returns a runtime made ahead, or nil when none is ready (the
// execution then makes its own).
func (c *child) takeWarm() *warmRuntime {
	select {
	case w := <-c.stock:
		return w
	default:
		return nil
	}
}

// refillWarm asks the warmer to make runtimes again.
func (c *child) refillWarm() {
	select {
	case c.refill <- struct{}{}:
	default:
	}
}
