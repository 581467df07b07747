package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	goruntime "runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
)

// Causes of an execution's context ending early.
var (
	errTimeout     = errors.New("wall timeout")
	errCPULimit    = errors.New("cpu time limit")
	errOutputLimit = errors.New("output limit")
)

// Run implements runtime.Engine: it compiles job.Module (or finds it in the
// cache), instantiates it and runs its _start. A module the engine cannot
// run gives an Outcome whose Err has KindSyntax and wraps ErrInvalidModule
// (errors.Is(out.Err, ErrInvalidModule)); servers validate modules with
// Compile first and map that error to INVALID_ARGUMENT.
func (e *Engine) Run(ctx context.Context, job *runtime.Job) (out *runtime.Outcome) {
	defer recoverInternal(&out)
	began := time.Now()
	ent, err := e.acquire(ctx, job.Module)
	if err != nil {
		return &runtime.Outcome{Err: acquireFault(ctx, err, job, time.Since(began))}
	}
	defer e.release(ent)
	return e.execute(ctx, ent, job)
}

// RunHash runs the cached module with the given hex SHA-256 (the hex SHA-256 of its bytes);
// job.Module is ignored. It returns ErrUnknownModule, and no Outcome, when
// the engine does not hold that module.
func (e *Engine) RunHash(ctx context.Context, hash string, job *runtime.Job) (out *runtime.Outcome, err error) {
	return e.runHash(ctx, hash, job, nil, "send the module bytes")
}

// runHash runs the cached module with the given hash, with its stdio given
// to s when s is not nil; hint ends the ErrUnknownModule error.
func (e *Engine) runHash(ctx context.Context, hash string, job *runtime.Job, s *streams, hint string) (out *runtime.Outcome, err error) {
	defer recoverInternal(&out)
	began := time.Now()
	ent, ok, err := e.acquireHash(ctx, strings.ToLower(hash))
	if errors.Is(err, ErrClosed) {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w %q: %s", ErrUnknownModule, hash, hint)
	}
	if err != nil {
		return &runtime.Outcome{Err: acquireFault(ctx, err, job, time.Since(began))}, nil
	}
	defer e.release(ent)
	return e.executeStreams(ctx, ent, job, s), nil
}

func recoverInternal(out **runtime.Outcome) {
	if r := recover(); r != nil {
		*out = &runtime.Outcome{Err: &fault.Error{Kind: fault.KindInternal, Message: "internal error in the wasm engine",
			Cause: fmt.Errorf("wasm engine panic: %v", r)}}
	}
}

// acquireFault classifies a failure to get a compiled module for job,
// elapsed after the execution began.
func acquireFault(ctx context.Context, err error, job *runtime.Job, elapsed time.Duration) *fault.Error {
	switch {
	case errors.Is(err, ErrClosed):
		return fault.Wrap(fault.KindInternal, err, "the wasm engine is closed")
	case errors.Is(err, ErrInvalidModule):
		return &fault.Error{Kind: fault.KindSyntax, Message: strings.TrimPrefix(err.Error(), ErrInvalidModule.Error()+": "), Cause: err}
	case ctx.Err() != nil:
		return contextFault(ctx.Err(), job.Limits.Timeout, elapsed)
	case errors.Is(err, ErrCompileLimit):
		// The module cannot be made ready to run here, as an invalid one.
		return &fault.Error{Kind: fault.KindSyntax, Message: strings.TrimPrefix(err.Error(), ErrCompileLimit.Error()+": "), Cause: err}
	default:
		return fault.Wrap(fault.KindInternal, err, "the module could not be prepared")
	}
}

// contextFault classifies the end of the caller's context: a deadline is a
// timeout (a breach of timeout, after elapsed), anything else a cancel.
func contextFault(cause error, timeout, elapsed time.Duration) *fault.Error {
	if errors.Is(cause, context.DeadlineExceeded) {
		fe := fault.Breach(fault.KindTimeout, int64(timeout), int64(elapsed), "the execution ran out of time")
		fe.Cause = cause
		return fe
	}
	return fault.Wrap(fault.KindCancelled, cause, "the execution was cancelled by the caller")
}

const pageSize = 65536

// execute instantiates ent for one job and runs it under the job's limits.
func (e *Engine) execute(ctx context.Context, ent *entry, job *runtime.Job) *runtime.Outcome {
	return e.executeStreams(ctx, ent, job, nil)
}

// executeStreams is execute, with the module's stdin and stdout given by
// s when it is not nil (see RunStreams).
func (e *Engine) executeStreams(ctx context.Context, ent *entry, job *runtime.Job, s *streams) *runtime.Outcome {
	// The job's limits are the effective ones (resolved once, in the
	// executor); a zero field means no limit, and memory is bounded by the
	// engine's maximum whatever the job says.
	lim := job.Limits
	memLimit := uint64(e.opts.MaxMemory)
	if lim.MemoryBytes > 0 && uint64(lim.MemoryBytes) < memLimit {
		memLimit = uint64(lim.MemoryBytes)
	}
	if need := ent.shape.memoryMinPage * pageSize; need > memLimit {
		return &runtime.Outcome{Err: fault.Breach(fault.KindMemoryLimit, int64(memLimit), int64(need),
			"the module needs %d bytes of memory at start, more than the limit of %d bytes; raise memory_bytes or shrink the module's initial memory", need, memLimit)}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	caller := job.Tools
	if caller == nil {
		caller = bridge.New(bridge.Config{ExecutionID: job.ExecutionID})
	}
	st := newExecState(caller, int(lim.MaxConcurrentToolCalls), ent.shape.hasMemory)
	st.idle = job.Idle
	alloc := &allocator{limit: memLimit, pool: &e.regions}
	maxOut := math.MaxInt - outputSlack
	if lim.MaxOutputBytes > 0 && lim.MaxOutputBytes < int64(maxOut) {
		maxOut = int(lim.MaxOutputBytes)
	}
	stdout := &outputWriter{max: maxOut + outputSlack, limit: int64(maxOut), onFull: func() { cancel(errOutputLimit) }, trap: e.opts.NoLoopChecks}
	stderr := &logWriter{logs: job.Logs}

	input := []byte(job.Input)
	if len(bytes.TrimSpace(input)) == 0 {
		input = []byte("null")
	}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("guest").
		WithStdin(bytes.NewReader(input)).
		WithStdout(stdout).
		WithStderr(stderr)
	if e.opts.RealClock {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithNanosleep(Sleeper(runCtx))
	}
	if e.opts.RealRandom {
		cfg = cfg.WithRandSource(cryptoReader{})
	}

	// The guest runs on this goroutine, locked to its thread so that the
	// thread's CPU clock measures the guest alone: not the time it waits
	// for tools, nor the time a loaded host does not schedule it.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	gcpu := newGuestCPU()
	start := time.Now()
	st.cpu = gcpu.now
	if s != nil {
		stdin, out := s.open(runCtx, Meter{CPU: st.cpu, Peak: alloc.peak64, Exclude: gcpu.exclude})
		cfg = cfg.WithArgs(s.args...).WithStdin(stdin).WithStdout(out)
		if s.configure != nil {
			cfg = s.configure(cfg)
		}
	}
	// The wall timer and the CPU watchdog end with the execution: both are
	// stopped by the deferred calls below, and their callbacks only cancel
	// runCtx.
	if lim.Timeout > 0 {
		wall := time.AfterFunc(lim.Timeout, func() { cancel(errTimeout) })
		defer wall.Stop()
	}
	cpu := startCPUWatch(gcpu.now, lim.CPUTime, func() { cancel(errCPULimit) })
	defer cpu.stop()

	ictx := experimental.WithMemoryAllocator(runCtx, alloc)
	ictx = context.WithValue(ictx, stateKey{}, st)
	mod, runErr := e.rt.InstantiateModule(ictx, ent.compiled, cfg)
	if mod != nil {
		_ = mod.Close(context.Background())
	}
	// No guest code or host function of this execution runs any more.
	alloc.release()
	elapsed := time.Since(start)
	stderr.flush()

	out := &runtime.Outcome{
		CPUTime:         gcpu.now(),
		PeakMemoryBytes: int64(alloc.peakBytes()),
	}
	result, full := stdout.result()
	if ferr := e.classify(runCtx, runErr, usage{elapsed: elapsed, cpu: out.CPUTime, output: stdout.written(), outputFull: full}, alloc, st, stderr, lim); ferr != nil {
		out.Err = ferr
		return out
	}
	if s != nil {
		return out
	}
	res, ferr := resultJSON(result, lim.MaxOutputBytes)
	if ferr != nil {
		out.Err = ferr
		return out
	}
	out.Result = res
	return out
}

// outputSlack lets whitespace around a result of exactly MaxOutputBytes
// (a trailing newline) through; the trimmed result is checked exactly.
const outputSlack = 64

// usage is what an execution used, for the observed value of a breach.
type usage struct {
	elapsed, cpu time.Duration
	// output is the bytes the guest wrote or tried to write to stdout, up
	// to the write that first took them past the limit; outputFull is
	// whether a write was refused for the limit.
	output     int64
	outputFull bool
}

// classify turns how the run ended into a fault, or nil for success.
// Order matters: a limit the host enforced explains the failure that
// followed it (a guest refused memory usually exits with an error).
func (e *Engine) classify(ctx context.Context, runErr error, used usage, alloc *allocator,
	st *execState, stderr *logWriter, lim limits.Limits) *fault.Error {
	if lim.MaxOutputBytes > 0 && used.outputFull {
		return fault.Breach(fault.KindOutputLimit, lim.MaxOutputBytes, used.output,
			"the module wrote more than %d bytes of result to stdout; return a smaller result (summarise, page, or filter)", lim.MaxOutputBytes)
	}
	if e.isClosed() {
		// Closing the runtime stops a guest with exit code 0, which would
		// look like success.
		return fault.Wrap(fault.KindCancelled, runErr, "the engine shut down during the execution; run it again")
	}
	// An execution whose context ended is over whatever the guest did
	// next: one that was cancelled while it waited for a tool, got a
	// "cancelled" error and finished normally was still cancelled.
	if runErr == nil && ctx.Err() == nil {
		return nil
	}
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errTimeout):
			return fault.Breach(fault.KindTimeout, int64(lim.Timeout), int64(used.elapsed),
				"the execution did not finish within %s; do less work per execution or raise the timeout", lim.Timeout)
		case errors.Is(cause, errCPULimit):
			return fault.Breach(fault.KindCPULimit, int64(lim.CPUTime), int64(used.cpu),
				"the module computed for more than %s of CPU time; do less work per execution or raise the CPU limit", lim.CPUTime)
		case errors.Is(cause, errOutputLimit):
			return fault.Breach(fault.KindOutputLimit, lim.MaxOutputBytes, used.output,
				"the module wrote more than %d bytes of result to stdout; return a smaller result", lim.MaxOutputBytes)
		default:
			return contextFault(cause, lim.Timeout, used.elapsed)
		}
	}
	if alloc.limitHit() {
		fe := fault.Breach(fault.KindMemoryLimit, int64(alloc.limit), int64(alloc.refusedBytes()),
			"the module tried to grow its memory past the limit of %d bytes; use less memory or raise memory_bytes", alloc.limit)
		fe.Cause = runErr
		return fe
	}
	if ce := st.limitError(); ce != nil {
		fe := fault.Breach(fault.KindToolCallLimit, ce.Limit, ce.Observed,
			"the module failed after a tool call was refused for the tool call limit%s; make fewer tool calls", tailSuffix(stderr))
		fe.Cause = runErr
		return fe
	}
	var exit *sys.ExitError
	if errors.As(runErr, &exit) {
		return fault.Wrap(fault.KindScript, runErr, fmt.Sprintf("the module exited with code %d%s", exit.ExitCode(), tailSuffix(stderr)))
	}
	msg, stack := splitTrap(runErr.Error())
	if fn := wasiWithoutMemory(msg, stack); fn != "" && !st.hasMemory {
		msg = fn + ": the module has no memory; define and export one as \"memory\""
	}
	return &fault.Error{Kind: fault.KindScript, Message: "the module trapped: " + msg + tailSuffix(stderr), Stack: stack, Cause: runErr}
}

func tailSuffix(w *logWriter) string {
	t := w.tailText()
	if t == "" {
		return ""
	}
	return "; stderr ends with: " + t
}

// splitTrap separates wazero's error text into the message and the wasm
// stack trace.
func splitTrap(s string) (msg, stack string) {
	msg, stack, _ = strings.Cut(s, "\n")
	msg = strings.TrimSuffix(strings.TrimSpace(msg), " (recovered by wazero)")
	// wazero prefixes "module[name] function[name] failed: ".
	if i := strings.Index(msg, "] failed: "); i >= 0 && strings.HasPrefix(msg, "module[") {
		msg = msg[i+len("] failed: "):]
	}
	// The host's own Go stack, which wazero appends after a panic in a
	// host function, is not the guest's business.
	stack, _, _ = strings.Cut(stack, "Go runtime stack trace:")
	stack = strings.TrimSpace(stack)
	return msg, stack
}

// wasiWithoutMemory returns the WASI function ("wasi_snapshot_preview1.fd_write")
// whose failure msg and stack describe when it is the nil dereference of a
// WASI function that needs the module's memory, or "". wazero's WASI
// functions assume a memory; the engine checks that the module has none.
func wasiWithoutMemory(msg, stack string) string {
	if !strings.Contains(msg, "nil pointer dereference") {
		return ""
	}
	_, frames, _ := strings.Cut(stack, "wasm stack trace:")
	top := strings.TrimSpace(frames)
	if i := strings.IndexAny(top, "(\n"); i >= 0 {
		top = top[:i]
	}
	if !strings.HasPrefix(top, "wasi_snapshot_preview1.") {
		return ""
	}
	return top
}

// resultJSON checks stdout: one JSON value, whitespace trimmed, compacted;
// empty is null.
func resultJSON(stdout []byte, max int64) (json.RawMessage, *fault.Error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return json.RawMessage("null"), nil
	}
	if max > 0 && int64(len(trimmed)) > max {
		return nil, fault.Breach(fault.KindOutputLimit, max, int64(len(trimmed)),
			"the result is %d bytes, more than the limit of %d bytes; return a smaller result", len(trimmed), max)
	}
	if !utf8.Valid(trimmed) {
		return nil, fault.New(fault.KindScript, "the module wrote bytes to stdout that are not valid UTF-8 (the first at byte %d of the result); JSON text must be UTF-8: write exactly one JSON value to stdout and logs to stderr", invalidUTF8At(trimmed))
	}
	if !json.Valid(trimmed) {
		return nil, fault.New(fault.KindScript, "the module wrote invalid JSON to stdout (%s); write exactly one JSON value to stdout and logs to stderr", preview(trimmed))
	}
	var buf bytes.Buffer
	buf.Grow(len(trimmed))
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, fault.Wrap(fault.KindScript, err, "the module wrote invalid JSON to stdout; write exactly one JSON value")
	}
	return json.RawMessage(buf.Bytes()), nil
}

// invalidUTF8At returns the offset of the first byte of b that does not
// begin a valid UTF-8 sequence, or -1.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

func preview(b []byte) string {
	const n = 40
	if len(b) > n {
		b = b[:n]
		for len(b) > 0 && b[len(b)-1]&0xC0 == 0x80 {
			b = b[:len(b)-1]
		}
		return fmt.Sprintf("%q…", b)
	}
	return fmt.Sprintf("%q", b)
}

// cpuWatch ends an execution whose guest computes for longer than its CPU
// budget, as the CPU clock of the thread the guest runs on measures it (a
// WASM guest is single-threaded and runs on the goroutine that instantiates
// it, locked to its thread for the execution).
type cpuWatch struct {
	mu    sync.Mutex
	timer *time.Timer
	done  chan struct{}
}

func startCPUWatch(used func() time.Duration, budget time.Duration, onLimit func()) *cpuWatch {
	w := &cpuWatch{done: make(chan struct{})}
	if budget <= 0 {
		return w
	}
	var check func()
	check = func() {
		select {
		case <-w.done:
			return
		default:
		}
		u := used()
		if u >= budget {
			onLimit()
			return
		}
		// Not yet: the guest waited on tools or was not scheduled. The
		// rest of the budget cannot be spent sooner than in as much wall
		// time.
		w.mu.Lock()
		w.timer.Reset(max(budget-u, time.Millisecond))
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.timer = time.AfterFunc(budget, check)
	w.mu.Unlock()
	return w
}

func (w *cpuWatch) stop() {
	close(w.done)
	w.mu.Lock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
}
