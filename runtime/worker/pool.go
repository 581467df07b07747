package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	workerv1 "github.com/ptcrun/ptc/proto/ptc/worker/v1"
	ptcruntime "github.com/ptcrun/ptc/runtime"
)

// Mode selects where a Pool runs executions.
type Mode int

const (
	// ModeWorker runs each execution in a worker process with a hard OS
	// memory limit; a worker that breaks a limit or dies is replaced. It
	// is the default.
	ModeWorker Mode = iota
	// ModeInProcess runs executions in the calling process with the same
	// guards, CPU clock and heap watchdog. The memory limit is best effort:
	// the heap is shared with the host program, and an allocation the
	// guards do not foresee can exhaust the host's memory. Use it for
	// embedding and trusted tests.
	ModeInProcess
)

// String returns "worker" or "inprocess".
func (m Mode) String() string {
	if m == ModeInProcess {
		return "inprocess"
	}
	return "worker"
}

// Config configures a Pool. The zero value is a useful default: worker
// mode, two warm workers, one execution per worker.
type Config struct {
	// Mode selects worker processes (default) or in-process execution.
	Mode Mode
	// Workers is the number of idle workers kept started, so that an
	// execution never waits for a process to start. Default 2; a negative
	// value keeps none (workers start on demand).
	Workers int
	// MaxWorkers bounds the worker processes alive at once; executions
	// beyond MaxWorkers × ExecutionsPerWorker wait. Default 64.
	MaxWorkers int
	// ExecutionsPerWorker is the density knob: the most executions one
	// worker process runs at once. 1 (the default) is the strongest
	// isolation: a breach or crash takes only its own execution with it.
	// Higher values park more executions per process (less memory per
	// parked execution) but share one memory budget and one fate.
	ExecutionsPerWorker int
	// RecycleAfter replaces a worker after this many executions. Default 1000.
	RecycleAfter int
	// RecycleRSSBytes replaces a worker whose resident memory grew by more
	// than this since it started. Default 256 MiB.
	RecycleRSSBytes int64
	// MaxExecutionMemoryBytes is the largest memory limit an execution
	// may have (the ceiling of the operator's policy). Default
	// limits.Ceilings().MemoryBytes.
	MaxExecutionMemoryBytes int64
	// WorkerMemoryBytes is the hard RLIMIT_DATA of each worker process.
	// Default: ExecutionsPerWorker × 2 × MaxExecutionMemoryBytes + 512 MiB
	// (one allocation may overshoot the heap watchdog by its own size).
	WorkerMemoryBytes int64
	// KillGrace is how long after its deadline (or after a cancel) an
	// execution's worker is killed when the script does not stop: a
	// non-interruptible built-in (a huge sort, JSON.parse of a huge
	// string) cannot be interrupted any other way. Default 1 s.
	KillGrace time.Duration
	// StartTimeout bounds the start-up handshake of a worker. Default 10 s.
	StartTimeout time.Duration
	// Executable is the binary started in worker mode; default
	// os.Executable(). It must call IsWorker and Main at the top of main.
	Executable string
	// NoNetworkNamespace disables the private network namespace of
	// workers (used only where the process may create one).
	NoNetworkNamespace bool
	// ProgramCache is the number of compiled programs each worker (or the
	// in-process executor) keeps. Default 64.
	ProgramCache int
	// MaxFrameBytes bounds one frame read from a worker. Default
	// DefaultMaxFrameBytes.
	MaxFrameBytes int
}

func (c Config) withDefaults() (Config, error) {
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.Workers < 0 {
		c.Workers = 0
	}
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = 64
	}
	if c.Workers > c.MaxWorkers {
		c.Workers = c.MaxWorkers
	}
	if c.ExecutionsPerWorker <= 0 {
		c.ExecutionsPerWorker = 1
	}
	if c.RecycleAfter <= 0 {
		c.RecycleAfter = 1000
	}
	if c.RecycleRSSBytes <= 0 {
		c.RecycleRSSBytes = 256 << 20
	}
	if c.MaxExecutionMemoryBytes <= 0 {
		c.MaxExecutionMemoryBytes = limits.Ceilings().MemoryBytes
	}
	if c.WorkerMemoryBytes <= 0 {
		c.WorkerMemoryBytes = int64(c.ExecutionsPerWorker)*2*c.MaxExecutionMemoryBytes + 512<<20
	}
	if c.KillGrace <= 0 {
		c.KillGrace = time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.ProgramCache <= 0 {
		c.ProgramCache = defaultProgramCache
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.Mode == ModeWorker && c.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("worker: cannot find the executable to start workers from (%v); set Config.Executable", err)
		}
		c.Executable = exe
	}
	if c.Mode != ModeWorker && c.Mode != ModeInProcess {
		return c, fmt.Errorf("worker: unknown mode %d; use ModeWorker or ModeInProcess", int(c.Mode))
	}
	return c, nil
}

// Pool is a runtime.Engine for JavaScript that runs each execution in a
// pool of pre-started worker processes (or in-process, see ModeInProcess).
// It is safe for concurrent use.
type Pool struct {
	cfg  Config
	exec *executor // in-process mode only

	mu       sync.Mutex
	procs    map[*proc]struct{}
	spawning int
	closed   bool
	changed  chan struct{}
	netnsErr error
	report   *Report

	// wg tracks the reader goroutine of every worker and the background
	// spawns; Close waits for it.
	wg sync.WaitGroup

	stats struct {
		started, died, recycled, killed atomic.Int64
	}
}

// NewPool returns a Pool and, in worker mode, starts its warm workers. The
// first worker is started synchronously so that a binary that cannot run
// workers fails here, with the reason.
func NewPool(cfg Config) (*Pool, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Pool{cfg: cfg, procs: map[*proc]struct{}{}, changed: make(chan struct{})}
	if cfg.Mode == ModeInProcess {
		p.exec = newExecutor(cfg.ProgramCache)
		return p, nil
	}
	w, err := p.spawn()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.addLocked(w)
	p.replenishLocked()
	p.mu.Unlock()
	return p, nil
}

// Run executes job.Source. It never panics; every failure is a classified
// error in the Outcome.
func (p *Pool) Run(ctx context.Context, job *ptcruntime.Job) *ptcruntime.Outcome {
	if len(job.Module) > 0 && job.Source == "" {
		return &ptcruntime.Outcome{Err: fault.New(fault.KindInternal, "the worker pool runs JavaScript; this job holds a WebAssembly module")}
	}
	if job.Tools == nil {
		j := *job
		j.Tools = bridge.New(bridge.Config{ExecutionID: job.ExecutionID})
		job = &j
	}
	if p.cfg.Mode == ModeInProcess {
		return p.exec.run(ctx, job, inProcessBaseline(job.Limits.MemoryBytes), true, nil)
	}
	return p.runWorker(ctx, job)
}

// Close stops every worker. Executions still running fail with CANCELLED.
// Close waits for the workers' goroutines to end.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	procs := make([]*proc, 0, len(p.procs))
	for w := range p.procs {
		procs = append(procs, w)
	}
	p.signalLocked()
	p.mu.Unlock()
	for _, w := range procs {
		w.killAll(fault.KindCancelled, "the worker pool was shut down")
	}
	p.wg.Wait()
	return nil
}

// Stats counts worker processes over the life of a pool.
type Stats struct {
	// Alive is the number of worker processes running now.
	Alive int
	// Started, Died, Recycled and Killed count workers started, ended
	// unexpectedly, replaced after a breach or their quota, and killed at a
	// deadline or cancel.
	Started, Died, Recycled, Killed int64
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	alive := len(p.procs)
	p.mu.Unlock()
	return Stats{Alive: alive, Started: p.stats.started.Load(), Died: p.stats.died.Load(),
		Recycled: p.stats.recycled.Load(), Killed: p.stats.killed.Load()}
}

// signalLocked wakes everyone waiting for a change of the pool.
func (p *Pool) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Pool) addLocked(w *proc) {
	p.procs[w] = struct{}{}
	p.wg.Add(1)
	// The reader ends when the worker's socket fails or closes (the
	// worker exited or was killed); it then reaps the process.
	go w.readLoop()
	p.signalLocked()
}

// replenishLocked starts background spawns until Workers idle workers
// exist (or are starting).
func (p *Pool) replenishLocked() {
	if p.closed {
		return
	}
	idle := p.spawning
	for w := range p.procs {
		if w.active == 0 && !w.retired {
			idle++
		}
	}
	for ; idle < p.cfg.Workers && len(p.procs)+p.spawning < p.cfg.MaxWorkers; idle++ {
		p.spawning++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			w, err := p.spawn()
			p.mu.Lock()
			defer p.mu.Unlock()
			p.spawning--
			if err != nil || p.closed {
				if w != nil {
					w.kill()
					p.wg.Add(1)
					go w.readLoop()
				}
				p.signalLocked()
				return
			}
			p.addLocked(w)
		}()
	}
}

// errPoolClosed is returned by acquire after Close.
var errPoolClosed = errors.New("worker pool is closed")

// acquire returns a worker with room for one more execution, starting one
// if needed and allowed, or waiting for one.
func (p *Pool) acquire(ctx context.Context) (*proc, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, errPoolClosed
		}
		if w := p.pickLocked(); w != nil {
			w.active++
			w.runs++
			p.replenishLocked()
			p.mu.Unlock()
			return w, nil
		}
		if len(p.procs)+p.spawning < p.cfg.MaxWorkers {
			p.spawning++
			p.mu.Unlock()
			w, err := p.spawn()
			p.mu.Lock()
			p.spawning--
			if err != nil {
				p.signalLocked()
				p.mu.Unlock()
				return nil, err
			}
			if p.closed {
				p.mu.Unlock()
				w.kill()
				p.wg.Add(1)
				go w.readLoop()
				return nil, errPoolClosed
			}
			p.addLocked(w)
			w.active++
			w.runs++
			p.mu.Unlock()
			return w, nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		p.mu.Lock()
	}
}

// pickLocked returns a usable worker with room, preferring one that
// already runs executions (packing) so idle workers stay warm.
func (p *Pool) pickLocked() *proc {
	var idle *proc
	for w := range p.procs {
		if w.retired || w.dead || w.active >= p.cfg.ExecutionsPerWorker {
			continue
		}
		if w.active > 0 {
			return w
		}
		if idle == nil {
			idle = w
		}
	}
	return idle
}

// release returns a worker's execution slot; a worker that is not clean
// or reached its quota is retired and stopped once idle.
func (p *Pool) release(w *proc, clean bool) {
	recycle := !clean || w.runsSnapshot() >= p.cfg.RecycleAfter
	if !recycle && w.runsSnapshot()%rssCheckEvery == 0 {
		if rss := procRSS(w.pid); rss > 0 && rss-w.startRSS > p.cfg.RecycleRSSBytes {
			recycle = true
		}
	}
	p.mu.Lock()
	w.active--
	if recycle && !w.retired {
		w.retired = true
		p.stats.recycled.Add(1)
	}
	stop := w.retired && w.active == 0
	p.signalLocked()
	p.replenishLocked()
	p.mu.Unlock()
	if stop {
		w.kill()
	}
}

// rssCheckEvery is how often (in executions) a worker's RSS is checked.
const rssCheckEvery = 32

// removed is called by a worker's reader once the process is gone.
func (p *Pool) removed(w *proc) {
	p.mu.Lock()
	delete(p.procs, w)
	p.signalLocked()
	p.replenishLocked()
	p.mu.Unlock()
}

// runWorker runs one job on a worker process.
func (p *Pool) runWorker(ctx context.Context, job *ptcruntime.Job) *ptcruntime.Outcome {
	w, err := p.acquire(ctx)
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return &ptcruntime.Outcome{Err: fault.Wrap(fault.KindTimeout, err, "the execution timed out while waiting for a free worker; retry later or raise the pool's MaxWorkers")}
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
	frame := &workerv1.SupervisorFrame{Msg: &workerv1.SupervisorFrame_Execute{Execute: &workerv1.Execute{
		Slot:          es.slot,
		ExecutionId:   job.ExecutionID,
		Source:        job.Source,
		InputJson:     job.Input,
		Limits:        limitsPB(job.Limits),
		ToolNames:     job.Tools.Names(),
		Logs:          job.Logs != nil,
		Language:      job.Language,
		Deterministic: job.Deterministic,
		Seed:          job.Seed,
		ClockStartUnixNanos: func() int64 {
			if job.ClockStart.IsZero() {
				return 0
			}
			return job.ClockStart.UnixNano()
		}(),
	}}}
	if err := w.send(frame); err != nil {
		w.kill()
	}
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
			_ = w.send(&workerv1.SupervisorFrame{Msg: &workerv1.SupervisorFrame_Cancel{Cancel: &workerv1.Cancel{Slot: es.slot}}})
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
	slot uint64
	job  *ptcruntime.Job
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
}

func newExecState(ctx context.Context, job *ptcruntime.Job, grace time.Duration) *execState {
	return &execState{job: job, done: make(chan *ptcruntime.Outcome, 1),
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

// proc is one worker process, as the supervisor sees it.
type proc struct {
	pool     *Pool
	cmd      *exec.Cmd
	pid      int
	conn     net.Conn
	r        *frameReader
	w        *frameWriter
	stderr   *head
	ready    *workerv1.Ready
	startRSS int64

	// active, runs, retired and dead are guarded by pool.mu.
	active  int
	runs    int
	retired bool
	dead    bool

	mu       sync.Mutex
	execs    map[uint64]*execState
	nextSlot uint64
	killOnce sync.Once
	// poolKill holds the kind and message of a Close.
	poolKillKind fault.Kind
	poolKillMsg  string
}

func (w *proc) runsSnapshot() int {
	w.pool.mu.Lock()
	defer w.pool.mu.Unlock()
	return w.runs
}

// register adds an execution; false if the worker is gone.
func (w *proc) register(es *execState) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.execs == nil {
		return false
	}
	w.nextSlot++
	es.slot = w.nextSlot
	w.execs[es.slot] = es
	return true
}

// frameWriteTimeout bounds one frame write to a worker: a worker that
// stops reading is killed rather than blocking the supervisor.
const frameWriteTimeout = 10 * time.Second

func (w *proc) send(m *workerv1.SupervisorFrame) error {
	err := w.w.write(m)
	if err != nil {
		w.kill()
	}
	return err
}

// kill ends the worker process (its whole process group).
func (w *proc) kill() {
	w.killOnce.Do(func() {
		_ = unix.Kill(-w.pid, unix.SIGKILL)
		_ = w.cmd.Process.Kill()
	})
}

// killFor kills the worker because execution es overran; es fails with
// kind, the worker's other executions with INTERNAL.
func (w *proc) killFor(es *execState, kind fault.Kind) {
	w.mu.Lock()
	es.killKind = kind
	w.mu.Unlock()
	w.kill()
}

// killAll kills the worker; all its executions fail with kind and msg.
func (w *proc) killAll(kind fault.Kind, msg string) {
	w.mu.Lock()
	w.poolKillKind, w.poolKillMsg = kind, msg
	w.mu.Unlock()
	w.kill()
}

// readLoop handles the worker's frames until its socket fails, then reaps
// the process and fails the executions it was running.
func (w *proc) readLoop() {
	defer w.pool.wg.Done()
	var f workerv1.WorkerFrame
	var err error
	for {
		if err = w.r.read(&f); err != nil {
			break
		}
		if err = w.handle(&f); err != nil {
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
	w.mu.Unlock()

	w.pool.mu.Lock()
	w.dead = true
	w.pool.mu.Unlock()
	if len(execs) > 0 && poolKind == fault.KindUnspecified {
		w.pool.stats.died.Add(1)
	}
	for _, es := range execs {
		var fe *fault.Error
		out := &ptcruntime.Outcome{}
		switch {
		case es.breach != nil && poolKind == fault.KindUnspecified:
			// The watchdog saw the breach but could not stop the script
			// (a built-in that cannot be interrupted): the worker then ran
			// out of memory or overran its deadline.
			fe = es.breach
			fe.Message += " (the script was inside a built-in that cannot be interrupted, so its worker was stopped)"
			fe.Cause = errors.Join(err, waitErr)
			out.CPUTime, out.PeakMemoryBytes = es.breachCPU, es.breachPeak
		case es.killKind == fault.KindTimeout:
			fe = fault.New(fault.KindTimeout, "the script did not finish within its %s time limit (it was stuck in a built-in that cannot be interrupted, so its worker was stopped); work on smaller data", es.job.Limits.Timeout)
			fe.Limit = es.job.Limits.Timeout.Nanoseconds()
		case es.killKind == fault.KindCancelled:
			fe = fault.New(fault.KindCancelled, "the execution was cancelled by the caller")
		case poolKind != fault.KindUnspecified:
			fe = fault.New(poolKind, "%s", poolMsg)
		default:
			fe = w.deathError(es, err, waitErr)
		}
		out.Err = fe
		es.done <- out
	}
	w.pool.removed(w)
}

// handle processes one frame from the worker. An error is a protocol
// violation: the worker is killed.
func (w *proc) handle(f *workerv1.WorkerFrame) error {
	switch m := f.Msg.(type) {
	case *workerv1.WorkerFrame_ToolStart:
		return w.toolStart(m.ToolStart)
	case *workerv1.WorkerFrame_Log:
		es := w.lookup(m.Log.GetSlot(), false)
		if es == nil {
			return nil
		}
		if es.job.Logs != nil {
			e := m.Log.GetEntry()
			es.job.Logs.Write(logLevel(e.GetLevel()), e.GetMessage())
		}
		return nil
	case *workerv1.WorkerFrame_Done:
		return w.done(m.Done)
	case *workerv1.WorkerFrame_Breach:
		fe := errorFromPB(m.Breach.GetError())
		if fe == nil || (fe.Kind != fault.KindMemoryLimit && fe.Kind != fault.KindCPULimit) {
			return errors.New("breach frame without a limit breach")
		}
		w.mu.Lock()
		if es := w.execs[m.Breach.GetSlot()]; es != nil && es.breach == nil {
			es.breach = fe
			es.breachCPU = durationFromPB(m.Breach.GetCpuTime())
			es.breachPeak = max(m.Breach.GetPeakMemoryBytes(), fe.Observed, 0)
		}
		w.mu.Unlock()
		return nil
	default:
		return errors.New("unexpected frame from the worker")
	}
}

func logLevel(l string) string {
	switch l {
	case "log", "info", "warn", "error", "debug":
		return l
	}
	return "log"
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
func (w *proc) toolStart(m *workerv1.ToolStart) error {
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
		reply := &workerv1.ToolReply{Slot: m.GetSlot(), Call: m.GetCall()}
		if err != nil {
			reply.Error = callErrorPB(err)
		} else {
			reply.ResultJson = out
		}
		_ = w.send(&workerv1.SupervisorFrame{Msg: &workerv1.SupervisorFrame_ToolReply{ToolReply: reply}})
	}()
	return nil
}

// done ends an execution with the worker's outcome, checked.
func (w *proc) done(m *workerv1.Done) error {
	es := w.lookup(m.GetSlot(), true)
	if es == nil {
		return fmt.Errorf("done for unknown execution slot %d", m.GetSlot())
	}
	out := &ptcruntime.Outcome{
		Err:             errorFromPB(m.GetError()),
		CPUTime:         durationFromPB(m.GetCpuTime()),
		PeakMemoryBytes: max(m.GetPeakMemoryBytes(), 0),
	}
	if out.Err == nil {
		if !validResult(m.GetResultJson(), es.job.Limits.MaxOutputBytes) {
			out.Err = fault.New(fault.KindInternal, "the worker returned an invalid result; run the execution again")
		} else {
			out.Result = json.RawMessage(m.GetResultJson())
		}
	}
	if m.GetLogsTruncated() && es.job.Logs != nil && !es.job.Logs.Full() {
		// The worker's buffer (same cap) dropped output: mark ours too.
		es.job.Logs.Write("log", " ")
	}
	es.clean = m.GetClean() && clean(out)
	es.done <- out
	return nil
}

// deathError classifies the death of a worker for one of its executions:
// MEMORY_LIMIT when the process ran out of memory (the Go runtime reports
// "out of memory" when RLIMIT_DATA refuses an allocation), INTERNAL
// otherwise (killed from outside, crashed, or broke the protocol).
func (w *proc) deathError(es *execState, readErr, waitErr error) *fault.Error {
	if oom, observed := outOfMemory(w.stderr.String()); oom {
		fe := fault.New(fault.KindMemoryLimit, "the script exhausted its memory (limit %d MiB) and its worker process was stopped; keep less data at once (process items in smaller batches, avoid building huge strings or arrays)", es.job.Limits.MemoryBytes>>20)
		fe.Limit, fe.Observed = es.job.Limits.MemoryBytes, observed
		fe.Cause = waitErr
		return fe
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

// inProcessBaseline returns the live heap an in-process execution is
// measured against. The live heap of the last GC may be stale (data of an
// earlier execution that has died since); when it is large — above four
// times the execution's memory limit — a collection refreshes it first.
func inProcessBaseline(memBytes int64) int64 {
	live := liveHeap()
	if memBytes > 0 && live > 4*memBytes {
		runtime.GC()
		live = liveHeap()
	}
	return live
}
