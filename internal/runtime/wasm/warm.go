package wasm

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
)

// errStartedClosed ends an instance that was closed before or instead of
// running its job.
var errStartedClosed = errors.New("the started instance was closed")

// Started is an instance of a cached module started ahead of its job
// (StartStreams): its guest runs job-independent work (an interpreter's
// start) and then waits on its stdin for the job. Run gives it the job
// and charges the job with what the guest does from then on; Close ends
// an instance that will not run one. An instance runs at most one job.
type Started struct {
	e     *Engine
	ent   *entry
	alloc *allocator
	st    *execState
	// ctx is the instance's context: it ends when Close or the end of its
	// execution (a limit, the caller, a protocol breach: Stop) cancels it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	stderr *logWriter

	// cpu is the guest's compute time, from its job's start (from the
	// guest's start before it); set before StartStreams returns.
	cpu *guestCPU
	ran atomic.Bool

	// done is closed when the guest has ended, after runErr and cpuEnd
	// are set.
	done   chan struct{}
	runErr error
	// cpuEnd is the guest's compute time when it ended.
	cpuEnd time.Duration
}

// StartStreams instantiates the cached module with the given hex SHA-256
// on a goroutine of its own, with standard streams its caller provides as
// for RunStreams, and returns at once: the guest runs until it waits on
// its stdin for a job, which the caller knows from its stdin (the
// instance's memory may grow to the engine's MaxMemory meanwhile). open
// gets the instance's context, which ends with the instance (Close, or
// the end of its execution), and its Meter: the guest's CPU time since its
// job began (since it started, before) and its memory. The goroutine ends
// with the guest: the caller's stdin must return io.EOF once that context
// ends.
//
// It returns ErrUnknownModule when the engine does not hold the module,
// ErrClosed when the engine is closed.
func (e *Engine) StartStreams(hash string, args []string,
	open OpenStreams, configure func(wazero.ModuleConfig) wazero.ModuleConfig) (*Started, error) {
	ent, ok, err := e.acquireHash(context.Background(), strings.ToLower(hash))
	if errors.Is(err, ErrClosed) {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w %q: compile the module first", ErrUnknownModule, hash)
	}
	if err != nil {
		return nil, err
	}
	memLimit := uint64(e.opts.MaxMemory)
	if need := ent.shape.memoryMinPage * pageSize; need > memLimit {
		e.release(ent)
		return nil, fmt.Errorf("the module needs %d bytes of memory at start, more than the engine's maximum of %d bytes", need, memLimit)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Started{
		e: e, ent: ent, ctx: ctx, cancel: cancel,
		alloc:  &allocator{limit: memLimit, pool: &e.regions},
		st:     newExecState(bridge.New(bridge.Config{}), 1, ent.shape.hasMemory),
		stderr: &logWriter{logs: runtime.NewLogBuffer(time.Now(), limits.Limits{MaxLogBytes: 1 << 10, MaxLogEntries: 8}, nil)},
		done:   make(chan struct{}),
	}
	began := make(chan struct{})
	// The goroutine owns the guest; it ends when the guest does, which
	// Close or the execution's end brings about by ending ctx.
	go func() {
		defer close(s.done)
		defer e.release(ent)
		// As in executeStreams: the thread's CPU clock measures the guest.
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		s.cpu = newGuestCPU()
		close(began)
		s.st.cpu = s.cpu.now
		stdin, stdout := open(ctx, Meter{CPU: s.cpu.now, Peak: s.alloc.peak64, Exclude: s.cpu.exclude})
		cfg := wazero.NewModuleConfig().WithName("").WithArgs(args...).
			WithStdin(stdin).WithStdout(stdout).WithStderr(s.stderr)
		if configure != nil {
			cfg = configure(cfg)
		}
		ictx := experimental.WithMemoryAllocator(ctx, s.alloc)
		ictx = context.WithValue(ictx, stateKey{}, s.st)
		mod, runErr := e.rt.InstantiateModule(ictx, ent.compiled, cfg)
		if mod != nil {
			_ = mod.Close(context.Background())
		}
		s.cpuEnd = s.cpu.now()
		// No guest code or host function of this instance runs any more.
		s.alloc.release()
		s.runErr = runErr
	}()
	<-began
	return s, nil
}

// Done is closed when the instance's guest has ended.
func (s *Started) Done() <-chan struct{} { return s.done }

// Fits reports whether a job whose memory limit is memoryBytes (0: the
// engine's maximum) may run on the instance: the memory the guest holds
// is within it.
func (s *Started) Fits(memoryBytes int64) bool {
	return s.alloc.size() <= s.memLimit(memoryBytes)
}

func (s *Started) memLimit(memoryBytes int64) uint64 {
	l := uint64(s.e.opts.MaxMemory)
	if memoryBytes > 0 && uint64(memoryBytes) < l {
		l = uint64(memoryBytes)
	}
	return l
}

// Stop ends the instance's execution with cause (a protocol breach seen
// by the caller's stdout).
func (s *Started) Stop(cause error) { s.cancel(cause) }

// Close ends an instance that has not run a job and waits for its guest
// to end. It does nothing to one that Run has taken.
func (s *Started) Close() {
	if s.ran.CompareAndSwap(false, true) {
		s.cancel(errStartedClosed)
		<-s.done
	}
}

// Run runs the job on the instance under the job's limits, as
// RunStreams would: memory (the guest's memory, its start included, is
// bounded by the job's limit from now on), time and CPU count from now;
// begin is called once they run, to hand the job to the guest's stdin.
// Run returns when the guest has ended; it may be called once, and not
// after Close.
func (s *Started) Run(ctx context.Context, job *runtime.Job, begin func()) *runtime.Outcome {
	if !s.ran.CompareAndSwap(false, true) {
		return &runtime.Outcome{Err: fault.New(fault.KindInternal, "the started instance already ran or was closed")}
	}
	defer s.cancel(nil)
	lim := job.Limits
	s.stderr.setLogs(job.Logs)
	start := time.Now()
	s.cpu.restart()
	if !s.alloc.setLimit(s.memLimit(lim.MemoryBytes)) {
		s.cancel(errStartedClosed)
		<-s.done
		l := s.memLimit(lim.MemoryBytes)
		return &runtime.Outcome{Err: fault.Breach(fault.KindMemoryLimit, int64(l), int64(s.alloc.size()),
			"the module holds %d bytes of memory at start, more than the limit of %d bytes; raise memory_bytes", s.alloc.size(), l)}
	}
	// The links below only cancel the instance's context, and end with
	// Run (the deferred calls).
	unlink := context.AfterFunc(ctx, func() { s.cancel(context.Cause(ctx)) })
	defer unlink()
	if lim.Timeout > 0 {
		wall := time.AfterFunc(lim.Timeout, func() { s.cancel(errTimeout) })
		defer wall.Stop()
	}
	cpu := startCPUWatch(s.cpu.now, lim.CPUTime, func() { s.cancel(errCPULimit) })
	defer cpu.stop()
	begin()
	<-s.done
	elapsed := time.Since(start)
	s.stderr.flush()
	out := &runtime.Outcome{
		CPUTime:         s.cpuEnd,
		PeakMemoryBytes: int64(s.alloc.peakBytes()),
	}
	if ferr := s.e.classify(s.ctx, s.runErr, usage{elapsed: elapsed, cpu: out.CPUTime}, s.alloc, s.st, s.stderr, lim); ferr != nil {
		out.Err = ferr
	}
	return out
}
