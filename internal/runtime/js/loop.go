package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsonval"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
)

// interruptReason is the value passed to goja's Interrupt.
type interruptReason int

const (
	reasonTimeout interruptReason = iota + 1
	reasonCancelled
	reasonCPU
)

var errTimeoutCause = errors.New("execution timeout")

// completion is a finished tool call, delivered to the VM goroutine.
type completion struct {
	resolve, reject func(any) error
	out             json.RawMessage
	err             error
	// site is where the script made the call (see callSite).
	site goja.StackFrame
}

// exec is one execution. Its methods, except the watchdog callbacks and
// the tool-call goroutines it starts, run on the VM goroutine.
type exec struct {
	e      *Engine
	job    *runtime.Job
	c      *compiled
	mapPos func(int, int) (int, int, bool)

	ctx    context.Context
	cancel context.CancelFunc
	// unwatch stops watch's callback (nil before watch).
	unwatch func() bool

	vm *goja.Runtime
	// spareJSON is a serialisation's state kept for the next one
	// (serialiseInto): nil while it is in use, so that a serialisation
	// started inside another (a getter or toJSON that calls
	// JSON.stringify) gets its own.
	spareJSON *jsonState
	// rawOwnDescriptor and rawOwnSymbols are goja's own
	// Object.getOwnPropertyDescriptor and Object.getOwnPropertySymbols
	// (builtins.go).
	rawOwnDescriptor, rawOwnSymbols func(goja.FunctionCall) goja.Value
	// rawObjectKeys and rawDefine are goja's own Object.keys and
	// Object.defineProperty; keyGet and keyDelete read and delete a
	// property by a JS string key, made when first needed. The JSON
	// conversions reach properties whose names have no exact Go form
	// through them (jsonkeys.go).
	rawObjectKeys, rawDefine func(goja.FunctionCall) goja.Value
	keyGet, keyDelete        goja.Callable
	// rawJSONParse is goja's own JSON.parse, which ptc's calls only to
	// make an intrinsic SyntaxError (json.go).
	rawJSONParse func(goja.FunctionCall) goja.Value

	// rawRangeError and rawSyntaxError make intrinsic errors (natives.go).
	rawRangeError, rawSyntaxError func() goja.Value
	// wrappers maps the stand-ins of guarded built-in functions (plain
	// functions for methods, proxies for constructors) to the originals;
	// hasInstance is Function.prototype[Symbol.hasInstance],
	// rawHasInstance its Go function.
	// standIns maps an original built-in method to its stand-in, so
	// that one built-in under two names (trimLeft and trimStart) keeps
	// one identity.
	wrappers, standIns map[*goja.Object]*goja.Object
	hasInstance        *goja.Object
	rawHasInstance     func(goja.FunctionCall) goja.Value
	// nativeDepth counts nested calls of guarded built-ins (recursion.go);
	// bound and proxies record the depth of the bound functions and
	// proxies the script made.
	nativeDepth    int
	bound, proxies map[*goja.Object]int
	// rawIsArray is goja's own Array.isArray and arrayTaken says it and
	// rawRangeError were taken (setup.go's arrayIntrinsics).
	rawIsArray func(goja.FunctionCall) goja.Value
	arrayTaken bool
	// objectTaken: rawOwnDescriptor, rawOwnSymbols, rawObjectKeys and
	// rawDefine were taken (objectIntrinsics).
	objectTaken bool
	// generatorsGuarded: GeneratorFunction is guarded (eval.go);
	// installed: the guard groups in place (lazy.go).
	generatorsGuarded bool
	installed         group
	// scansGuarded: the scan guards are in place (scans.go, lazy.go).
	scansGuarded bool
	// iterSteps counts the steps of array and string iterators: every
	// 256th checks the limits (scans.go).
	iterSteps uint64

	// done carries completed tool calls to the VM goroutine (made by the
	// first spawn). Tool-call goroutines give up sending once finished is
	// closed.
	done     chan completion
	finished chan struct{}
	pending  int
	// queued holds inline-capable calls started in the current VM segment.
	queued []queuedCall
	wg     sync.WaitGroup
	// aw is the job's Caller when it answers calls itself (a worker's call
	// proxy): calls are begun through it and their answers awaited on the
	// VM goroutine; tickets holds the promises of the calls not answered.
	aw      bridge.Awaiter
	tickets map[uint32]queuedCall

	// keys interns property names across the tool results of the execution.
	keys map[string]string

	// callErrs maps the JS error objects made for failed calls back to
	// the bridge errors, so an uncaught one is classified by its kind.
	callErrs map[*goja.Object]*bridge.CallError
	// frames is callSite's buffer.
	frames []goja.StackFrame
	// inputNull: the script's input is null (see nullInputMessage).
	inputNull bool

	// busy accounting: the VM's running time stands in for CPU time
	// in-process (worker processes measure the OS CPU clock).
	busy     time.Duration
	segStart time.Time
	cpuTimer *time.Timer
	// began is when the execution started, for the observed time of a
	// timeout; deadline is when its own time limit runs out (zero: no
	// limit). The context's deadline may be the caller's, earlier.
	began, deadline time.Time
}

func newExec(e *Engine) *exec {
	return &exec{e: e, finished: make(chan struct{})}
}

// attach gives an execution its job; its runtime may already exist (Warm).
func (x *exec) attach(ctx context.Context, job *runtime.Job, c *compiled, mapPos func(int, int) (int, int, bool)) {
	x.job, x.c, x.mapPos, x.began = job, c, mapPos, time.Now()
	x.aw, _ = job.Tools.(bridge.Awaiter)
	if job.Limits.Timeout > 0 {
		x.deadline = x.began.Add(job.Limits.Timeout)
		x.ctx, x.cancel = context.WithDeadlineCause(ctx, x.deadline, errTimeoutCause)
	} else {
		x.ctx, x.cancel = context.WithCancel(ctx)
	}
}

func (x *exec) run() (out *runtime.Outcome) {
	out = &runtime.Outcome{}
	defer func() {
		if r := recover(); r != nil {
			out.Result = nil
			out.Err = panicFault(r, debug.Stack())
		}
		x.stopCPU()
		if x.unwatch != nil {
			x.unwatch()
		}
		out.Err = x.limitHit(out.Err)
		// Calls the script started but never waited for run like any
		// other call at the end of an execution: on a goroutine, with the
		// context cancelled.
		x.cancel()
		for _, c := range x.queued {
			x.spawn(c)
		}
		x.queued = nil
		close(x.finished)
		x.drain()
		out.CPUTime = x.busy
	}()

	if err := x.setup(); err != nil {
		out.Err = err
		return out
	}
	x.watch()

	x.startCPU()
	fnVal, err := x.vm.RunProgram(x.c.prg)
	x.stopCPU()
	if err != nil {
		out.Err = x.classify(err)
		return out
	}
	fn, ok := goja.AssertFunction(fnVal)
	if !ok {
		out.Err = fault.New(fault.KindSyntax, "the script must be the body of an async function (it closed the function early)")
		return out
	}
	x.startCPU()
	pv, err := fn(goja.Undefined())
	x.stopCPU()
	if err != nil {
		out.Err = x.classify(err)
		return out
	}
	p, ok := pv.Export().(*goja.Promise)
	if !ok {
		out.Err = fault.New(fault.KindInternal, "main function did not return a promise")
		return out
	}
	for {
		switch p.State() {
		case goja.PromiseStateFulfilled:
			out.Result, out.Err = x.result(p.Result())
			return out
		case goja.PromiseStateRejected:
			if x.expired() {
				out.Err = x.ctxError()
				return out
			}
			out.Err = x.uncaught(p.Result())
			return out
		}
		if c, ok := x.flush(); ok {
			if out.Err = x.settle(c); out.Err != nil {
				return out
			}
			continue
		}
		if x.pending == 0 && len(x.tickets) > 0 {
			if x.job.Idle != nil {
				x.job.Idle(len(x.tickets), x.busy)
			}
			c, err := x.await()
			if err != nil {
				out.Err = x.ctxError()
				return out
			}
			if out.Err = x.settle(c); out.Err != nil {
				return out
			}
			continue
		}
		if x.pending == 0 {
			out.Err = fault.New(fault.KindScript, "the script is waiting for a promise that can never settle "+
				"(nothing it awaits is pending: resolve every promise you create, and do not use timers)")
			return out
		}
		if x.job.Idle != nil {
			x.job.Idle(x.pending, x.busy)
		}
		select {
		case c := <-x.done:
			x.pending--
			if out.Err = x.settle(c); out.Err != nil {
				return out
			}
		case <-x.ctx.Done():
			out.Err = x.ctxError()
			return out
		}
	}
}

// limitHit returns the limit error of an execution whose failure came
// while a limit ran out (describing a thrown value can run script code
// that is then interrupted): the limit it hit, not the script error.
func (x *exec) limitHit(fe *fault.Error) *fault.Error {
	if fe == nil || fe.Kind != fault.KindScript {
		return fe
	}
	if x.expired() {
		return x.ctxError()
	}
	if l := x.job.Limits.CPUTime; l > 0 && x.busy >= l {
		return x.cpuError()
	}
	return fe
}

// watch has the VM interrupted when the execution's context ends, by a
// callback that context.AfterFunc runs on a goroutine of its own then: an
// execution whose context does not end starts no goroutine. run stops it
// when the execution finishes, before it cancels the context itself.
func (x *exec) watch() {
	x.unwatch = context.AfterFunc(x.ctx, func() {
		if errors.Is(context.Cause(x.ctx), errTimeoutCause) {
			x.vm.Interrupt(reasonTimeout)
		} else {
			x.vm.Interrupt(reasonCancelled)
		}
	})
}

func (x *exec) startCPU() {
	x.segStart = time.Now()
	limit := x.job.Limits.CPUTime
	if limit <= 0 {
		return
	}
	left := limit - x.busy
	if left <= 0 {
		left = time.Nanosecond
	}
	vm := x.vm
	if x.cpuTimer == nil {
		x.cpuTimer = time.AfterFunc(left, func() { vm.Interrupt(reasonCPU) })
	} else {
		x.cpuTimer.Reset(left)
	}
}

func (x *exec) stopCPU() {
	if x.segStart.IsZero() {
		return
	}
	x.busy += time.Since(x.segStart)
	x.segStart = time.Time{}
	if x.cpuTimer != nil {
		x.cpuTimer.Stop()
	}
}

// drain waits for tool-call goroutines after the context was cancelled,
// bounded so that a handler ignoring its context cannot hold the caller.
func (x *exec) drain() {
	if x.pending == 0 {
		x.wg.Wait()
		return
	}
	ch := make(chan struct{})
	go func() { x.wg.Wait(); close(ch) }()
	t := time.NewTimer(drainGrace)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// expired reports whether the execution's context is done or its deadline
// has passed (a tool may notice the deadline a moment before the context).
func (x *exec) expired() bool {
	if x.ctx.Err() != nil {
		return true
	}
	dl, ok := x.ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// endReason says why an execution whose context ended or whose deadline
// passed must stop: its own time limit ran out (reasonTimeout), or its
// caller ended it, a deadline of the caller's included
// (reasonCancelled). The cause is read once: a context whose deadline has
// passed may end between two reads, and a second read of its error would
// take one for the other. Until the context ends, only the execution's
// own deadline makes a timeout.
func (x *exec) endReason() interruptReason {
	cause := context.Cause(x.ctx)
	if errors.Is(cause, errTimeoutCause) ||
		(cause == nil && !x.deadline.IsZero() && !time.Now().Before(x.deadline)) {
		return reasonTimeout
	}
	return reasonCancelled
}

// ctxError returns the error of an execution whose context ended or
// whose deadline passed (endReason).
func (x *exec) ctxError() *fault.Error {
	if x.endReason() == reasonTimeout {
		return x.timeoutError()
	}
	return fault.New(fault.KindCancelled, "the execution was cancelled by the caller")
}

func (x *exec) timeoutError() *fault.Error {
	return fault.Breach(fault.KindTimeout, x.job.Limits.Timeout.Nanoseconds(), time.Since(x.began).Nanoseconds(),
		"the script did not finish within its %s time limit", x.job.Limits.Timeout)
}

// settle delivers a finished tool call and returns the error that ends
// the execution if delivering it did: what the script threw, or the limit
// that ran out while it ran (a script error raised by an expired context
// is the timeout, not the script's).
func (x *exec) settle(c completion) *fault.Error {
	err := x.deliver(c)
	if err == nil {
		return nil
	}
	if fe := x.classify(err); !x.expired() || fe.Kind != fault.KindScript {
		return fe
	}
	return x.ctxError()
}

// deliver settles the promise of a finished tool call; the promise job
// queue (the script's continuations) runs inside.
func (x *exec) deliver(c completion) error {
	x.startCPU()
	defer x.stopCPU()
	if c.err != nil {
		return c.reject(x.callError(c.err, c.site))
	}
	v, err := x.fromJSON(c.out)
	if err != nil {
		msg := "tool returned invalid JSON"
		if errors.Is(err, jsonval.ErrTooDeep) {
			msg = fmt.Sprintf("tool returned JSON nested more than %d levels deep", maxJSONDepth)
		}
		return c.reject(x.callError(&bridge.CallError{Name: bridge.NameToolError, Code: tools.CodeInvalidOutput, Message: msg}, c.site))
	}
	return c.resolve(v)
}

// fromJSON converts JSON text into a JS value as JSON.parse does.
func (x *exec) fromJSON(data []byte) (goja.Value, error) {
	if x.keys == nil && len(data) > 256 {
		x.keys = make(map[string]string, 32)
	}
	return decodeJSON(x.vm, x, data, false, x.keys)
}

// result serialises the script's return value, into bytes that become
// the result as they are (no string copies), and stops as soon as the
// text passes max_output_bytes: a value whose JSON is far larger than its
// heap (one array referenced a million times, a long string repeated)
// never makes the engine build more than the limit.
func (x *exec) result(v goja.Value) (json.RawMessage, *fault.Error) {
	if v == nil || goja.IsUndefined(v) {
		return json.RawMessage("null"), nil
	}
	max := x.job.Limits.MaxOutputBytes
	x.startCPU()
	b, over, err := x.resultJSON(v, max)
	x.stopCPU()
	var mo *memoryOver
	if errors.As(err, &mo) {
		m := x.job.Limits.MemoryBytes
		return nil, fault.Breach(fault.KindMemoryLimit, m, int64(mo.n),
			"the result would need %d bytes of JSON, more than the memory limit of %d bytes; return less (aggregate, filter or summarise)", mo.n, m)
	}
	if err != nil {
		if reason := x.outOfTime(); reason != 0 {
			// Out of time while serialising (tick), or while a toJSON
			// or getter ran: the limit, not the script, ended it.
			return nil, x.reasonError(reason)
		}
		var ex *goja.Exception
		if errors.As(err, &ex) && !isUncatchable(err) {
			fe := fault.New(fault.KindScript, "the return value cannot be converted to JSON: %s", x.describe(ex.Value()))
			fe.Line, fe.Column = x.position(ex.Value())
			return nil, fe
		}
		return nil, x.classify(err)
	}
	if over > 0 {
		return nil, fault.Breach(fault.KindOutputLimit, max, int64(over),
			"the result is at least %d bytes of JSON, more than the %d allowed; return less (aggregate, filter or summarise)", over, max)
	}
	if b == nil {
		return json.RawMessage("null"), nil
	}
	return json.RawMessage(b), nil
}

// resultJSON is JSON.stringify(v) into bytes (nil when v has no JSON
// representation), stopped once it passes limit bytes (0: no limit):
// over is then the size it had reached, more than limit; or once its
// buffer would pass the memory limit (a *memoryOver error). A JS exception
// is returned as an error, as are uncatchable errors (interrupts).
func (x *exec) resultJSON(v goja.Value, limit int64) (b []byte, over int, err error) {
	defer func() {
		if r := recover(); r != nil {
			if o, ok := r.(outputOver); ok {
				b, over, err = nil, o.n, nil
				return
			}
			if m, ok := r.(memoryOver); ok {
				b, err = nil, &m
				return
			}
			if e, ok := r.(error); ok && isUncatchable(e) {
				b, err = nil, e
				return
			}
			panic(r)
		}
	}()
	if limit < 0 {
		limit = 0
	}
	if ex := x.vm.Try(func() { b, _ = x.serialise(v, nil, nil, int(limit)) }); ex != nil {
		return nil, 0, ex
	}
	return b, 0, nil
}

// queuedCall is a started call not yet handed to a goroutine.
type queuedCall struct {
	inv             bridge.Invocation
	resolve, reject func(any) error
	site            goja.StackFrame
}

// spawn runs a call on its own goroutine. The goroutine ends when the
// invocation returns (the execution's context bounds it) and its result
// is handed over, or dropped once the execution has finished.
func (x *exec) spawn(c queuedCall) {
	if x.done == nil {
		// Made by the first call that needs it: most executions
		// start none (inline calls run on the VM goroutine).
		x.done = make(chan completion, 16)
	}
	x.pending++
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		out, err := c.inv()
		select {
		case x.done <- completion{resolve: c.resolve, reject: c.reject, out: out, err: err, site: c.site}:
		case <-x.finished:
		}
	}()
}

// flush is called when the VM has gone idle. A single inline-capable call
// that nothing else runs beside runs here, on the VM goroutine, and its
// completion is returned for delivery — saving two goroutine hand-offs per
// awaited call; otherwise every queued call gets its goroutine, so calls
// made together still run concurrently.
func (x *exec) flush() (completion, bool) {
	if len(x.queued) == 1 && x.pending == 0 {
		c := x.queued[0]
		x.queued = x.queued[:0]
		out, err := c.inv()
		return completion{resolve: c.resolve, reject: c.reject, out: out, err: err, site: c.site}, true
	}
	for _, c := range x.queued {
		x.spawn(c)
	}
	x.queued = x.queued[:0]
	return completion{}, false
}
