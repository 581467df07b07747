package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/runtime"
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
}

// exec is one execution. Its methods, except the watchdog goroutines and
// the tool-call goroutines it starts, run on the VM goroutine.
type exec struct {
	e      *Engine
	job    *runtime.Job
	c      *compiled
	mapPos func(int, int) (int, int, bool)

	ctx    context.Context
	cancel context.CancelFunc

	vm        *goja.Runtime
	stringify goja.Callable
	parse     goja.Callable

	// done carries completed tool calls to the VM goroutine. Tool-call
	// goroutines give up sending once finished is closed.
	done     chan completion
	finished chan struct{}
	pending  int
	// queued holds inline-capable calls started in the current VM segment.
	queued []queuedCall
	wg     sync.WaitGroup

	// keys interns property names across the tool results of the execution.
	keys map[string]string

	// callErrs maps the JS error objects made for failed calls back to
	// the bridge errors, so an uncaught one is classified by its kind.
	callErrs map[*goja.Object]*bridge.CallError

	// busy accounting: the VM's running time stands in for CPU time
	// in-process (worker processes measure the OS CPU clock).
	busy     time.Duration
	segStart time.Time
	cpuTimer *time.Timer
	// began is when the execution started, for the observed time of a
	// timeout.
	began time.Time
}

func newExec(ctx context.Context, e *Engine, job *runtime.Job, c *compiled, mapPos func(int, int) (int, int, bool)) *exec {
	x := &exec{e: e, job: job, c: c, mapPos: mapPos, began: time.Now(),
		done: make(chan completion, 16), finished: make(chan struct{})}
	if job.Limits.Timeout > 0 {
		x.ctx, x.cancel = context.WithTimeoutCause(ctx, job.Limits.Timeout, errTimeoutCause)
	} else {
		x.ctx, x.cancel = context.WithCancel(ctx)
	}
	return x
}

func (x *exec) run() (out *runtime.Outcome) {
	out = &runtime.Outcome{}
	defer func() {
		if r := recover(); r != nil {
			out.Result = nil
			out.Err = &fault.Error{Kind: fault.KindInternal, Message: "internal error in the JavaScript engine",
				Cause: fmt.Errorf("panic: %v\n%s", r, debug.Stack())}
		}
		x.stopCPU()
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
	go x.watch()

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
			if err := x.deliver(c); err != nil {
				out.Err = x.classify(err)
				if x.expired() && out.Err.Kind == fault.KindScript {
					out.Err = x.ctxError()
				}
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
			if err := x.deliver(c); err != nil {
				out.Err = x.classify(err)
				if x.expired() && out.Err.Kind == fault.KindScript {
					out.Err = x.ctxError()
				}
				return out
			}
		case <-x.ctx.Done():
			out.Err = x.ctxError()
			return out
		}
	}
}

// setup creates the runtime and binds input, tools and console.
func (x *exec) setup() *fault.Error {
	vm := goja.New()
	vm.SetMaxCallStackSize(x.e.maxStack)
	if x.job.Deterministic {
		rng := rand.New(rand.NewPCG(x.job.Seed, x.job.Seed^0x9e3779b97f4a7c15))
		vm.SetRandSource(rng.Float64)
		now := x.job.ClockStart
		vm.SetTimeSource(func() time.Time {
			t := now
			now = now.Add(runtime.VirtualClockStep)
			return t
		})
	}
	x.vm = vm
	jsonObj := vm.Get("JSON").ToObject(vm)
	x.stringify, _ = goja.AssertFunction(jsonObj.Get("stringify"))
	x.parse, _ = goja.AssertFunction(jsonObj.Get("parse"))

	input := goja.Null()
	if len(x.job.Input) > 0 {
		v, err := x.fromJSON(x.job.Input)
		if err != nil {
			return fault.New(fault.KindInternal, "input is not valid JSON")
		}
		input = v
	}
	g := vm.GlobalObject()
	_ = g.Set("input", input)
	if x.c.dispose {
		sym := vm.Get("Symbol").ToObject(vm)
		for _, name := range []string{"dispose", "asyncDispose"} {
			if v := sym.Get(name); v == nil || goja.IsUndefined(v) {
				_ = sym.Set(name, goja.NewSymbol("Symbol."+name))
			}
		}
	}
	x.lazyGlobal(g, "tools", x.toolsObject)
	x.lazyGlobal(g, "console", x.consoleObject)
	x.guardBuiltins()
	return nil
}

// lazyGlobal defines a global that is built on first use (most scripts
// touch only some of them). It is read-only: a script that wants another
// `tools` declares its own binding.
func (x *exec) lazyGlobal(g *goja.Object, name string, build func() goja.Value) {
	vm := x.vm
	getter := vm.ToValue(func(goja.FunctionCall) goja.Value {
		v := build()
		_ = g.DefineDataProperty(name, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		return v
	})
	_ = g.DefineAccessorProperty(name, getter, nil, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// watch interrupts the VM when the execution's context ends. It returns
// when the execution finishes.
func (x *exec) watch() {
	select {
	case <-x.ctx.Done():
		if errors.Is(context.Cause(x.ctx), errTimeoutCause) {
			x.vm.Interrupt(reasonTimeout)
		} else {
			x.vm.Interrupt(reasonCancelled)
		}
	case <-x.finished:
	}
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

func (x *exec) ctxError() *fault.Error {
	if errors.Is(context.Cause(x.ctx), errTimeoutCause) || (x.ctx.Err() == nil && x.expired()) {
		return x.timeoutError()
	}
	return fault.New(fault.KindCancelled, "the execution was cancelled by the caller")
}

func (x *exec) timeoutError() *fault.Error {
	return fault.Breach(fault.KindTimeout, x.job.Limits.Timeout.Nanoseconds(), time.Since(x.began).Nanoseconds(),
		"the script did not finish within its %s time limit", x.job.Limits.Timeout)
}

// deliver settles the promise of a finished tool call; the promise job
// queue (the script's continuations) runs inside.
func (x *exec) deliver(c completion) error {
	x.startCPU()
	defer x.stopCPU()
	if c.err != nil {
		return c.reject(x.callError(c.err))
	}
	v, err := x.fromJSON(c.out)
	if err != nil {
		return c.reject(x.callError(&bridge.CallError{Name: bridge.NameToolError, Code: tools.CodeInvalidOutput,
			Message: "tool returned invalid JSON"}))
	}
	return c.resolve(v)
}

// fromJSON converts JSON text into a JS value: the fast decoder, or
// JSON.parse for the rare text it leaves to it.
func (x *exec) fromJSON(data []byte) (goja.Value, error) {
	if x.keys == nil && len(data) > 256 {
		x.keys = make(map[string]string, 32)
	}
	v, err := decodeJSON(x.vm, data, x.keys)
	if errors.Is(err, errLoneSurrogate) {
		return x.parse(goja.Undefined(), x.vm.ToValue(string(data)))
	}
	return v, err
}

// result serialises the script's return value.
func (x *exec) result(v goja.Value) (json.RawMessage, *fault.Error) {
	if v == nil || goja.IsUndefined(v) {
		return json.RawMessage("null"), nil
	}
	x.startCPU()
	s, err := x.stringify(goja.Undefined(), v)
	x.stopCPU()
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) && !isUncatchable(err) {
			fe := fault.New(fault.KindScript, "the return value cannot be converted to JSON: %s", x.describe(ex.Value()))
			fe.Line, fe.Column = x.position(ex.Value())
			return nil, fe
		}
		return nil, x.classify(err)
	}
	if s == nil || goja.IsUndefined(s) {
		return json.RawMessage("null"), nil
	}
	str := s.String()
	if max := x.job.Limits.MaxOutputBytes; max > 0 && int64(len(str)) > max {
		return nil, fault.Breach(fault.KindOutputLimit, max, int64(len(str)),
			"the result is %d bytes of JSON, more than the %d allowed; return less (aggregate, filter or summarise)", len(str), max)
	}
	return json.RawMessage(str), nil
}

// uncaught classifies a rejection of the main promise.
func (x *exec) uncaught(v goja.Value) *fault.Error {
	if obj, ok := v.(*goja.Object); ok {
		if ce, ok := x.callErrs[obj]; ok {
			fe := fault.New(ce.Kind(), "uncaught %s from tool %s (code %s): %s", ce.Name, ce.Tool, ce.Code, ce.Message)
			if fe.Kind.IsBreach() {
				fe = fault.Breach(fe.Kind, ce.Limit, ce.Observed, "%s", fe.Message)
			}
			fe.Tool = ce.Tool
			fe.Line, fe.Column = x.position(v)
			fe.Stack = x.stack(v)
			return fe
		}
	}
	fe := fault.New(fault.KindScript, "uncaught %s", x.describe(v))
	if !isErrorObject(v) {
		fe.Message = "uncaught exception: " + x.describe(v)
	}
	fe.Line, fe.Column = x.position(v)
	fe.Stack = x.stack(v)
	return fe
}

// classify turns an error from goja into a fault.
func (x *exec) classify(err error) *fault.Error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		switch ie.Value() {
		case reasonCPU:
			return fault.Breach(fault.KindCPULimit, x.job.Limits.CPUTime.Nanoseconds(), x.busy.Nanoseconds(),
				"the script used more than its %s of CPU time", x.job.Limits.CPUTime)
		case reasonTimeout:
			return x.timeoutError()
		default:
			return fault.New(fault.KindCancelled, "the execution was cancelled by the caller")
		}
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		fe := fault.New(fault.KindScript, "RangeError: maximum call stack size exceeded (%d frames); use iteration instead of deep recursion", x.e.maxStack)
		if fr := so.Stack(); len(fr) > 0 {
			p := fr[0].Position()
			fe.Line, fe.Column = x.mapPosition(p.Line, p.Column)
		}
		return fe
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return x.uncaught(ex.Value())
	}
	return &fault.Error{Kind: fault.KindInternal, Message: "internal error in the JavaScript engine", Cause: err}
}

func isUncatchable(err error) bool {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	return errors.As(err, &ie) || errors.As(err, &so)
}

func isErrorObject(v goja.Value) bool {
	obj, ok := v.(*goja.Object)
	if !ok {
		return false
	}
	st := obj.Get("stack")
	if st == nil {
		return false
	}
	_, ok = st.Export().(string)
	return ok
}

// maxDescribe bounds the text describing a thrown value.
const maxDescribe = 2000

// describe renders a thrown value without letting a hostile toString or
// getter escape: any exception while describing gives a placeholder.
func (x *exec) describe(v goja.Value) (s string) {
	defer func() {
		if recover() != nil {
			s = "[value that cannot be printed]"
		}
		if len(s) > maxDescribe {
			s = s[:maxDescribe] + "…"
		}
	}()
	if v == nil {
		return "undefined"
	}
	x.startCPU()
	defer x.stopCPU()
	if obj, ok := v.(*goja.Object); ok && !isErrorObject(v) {
		if j, err := x.stringify(goja.Undefined(), obj); err == nil && j != nil && !goja.IsUndefined(j) {
			return j.String()
		}
	}
	if ex := x.vm.Try(func() { s = v.String() }); ex != nil {
		return "[value that cannot be printed]"
	}
	if _, ok := v.Export().(string); ok && !isErrorObject(v) {
		return strconv.Quote(s)
	}
	return s
}

// stackPositions caches, per compiled file name, the pattern of its
// positions in goja stack traces ("name:line:col(pc)").
var stackPositions sync.Map

func stackPos(file string) *regexp.Regexp {
	if re, ok := stackPositions.Load(file); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(regexp.QuoteMeta(file) + `:(\d+):(\d+)(?:\(\d+\))?`)
	stackPositions.Store(file, re)
	return re
}

// stackOf returns the "stack" string of an Error object, or "".
func stackOf(v goja.Value) string {
	obj, ok := v.(*goja.Object)
	if !ok {
		return ""
	}
	var s string
	defer func() { _ = recover() }()
	if st := obj.Get("stack"); st != nil {
		s, _ = st.Export().(string)
	}
	return s
}

// position returns the first script position in an error's stack.
func (x *exec) position(v goja.Value) (int, int) {
	m := stackPos(x.c.file).FindStringSubmatch(stackOf(v))
	if m == nil {
		return 0, 0
	}
	l, _ := strconv.Atoi(m[1])
	c, _ := strconv.Atoi(m[2])
	return x.mapPosition(l, c)
}

// mapPosition maps a position in the compiled code to the caller's source.
func (x *exec) mapPosition(line, col int) (int, int) {
	if line == 1 && x.c.col1 > 0 {
		col -= x.c.col1
		if col < 1 {
			col = 1
		}
	}
	if x.mapPos != nil {
		if l, c, ok := x.mapPos(line, col); ok {
			return l, c
		}
	}
	return line, col
}

// maxStackFrames bounds the frames reported in a stack.
const maxStackFrames = 20

// stack returns the script frames of an error's stack, positions mapped
// to the caller's source, native and internal frames dropped.
func (x *exec) stack(v goja.Value) string {
	raw := stackOf(v)
	if raw == "" {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "at ") || !strings.Contains(line, x.c.file) {
			continue
		}
		re := stackPos(x.c.file)
		line = re.ReplaceAllStringFunc(line, func(m string) string {
			sm := re.FindStringSubmatch(m)
			l, _ := strconv.Atoi(sm[1])
			c, _ := strconv.Atoi(sm[2])
			l, c = x.mapPosition(l, c)
			return fmt.Sprintf("%s:%d:%d", x.c.display, l, c)
		})
		b.WriteString(line)
		b.WriteByte('\n')
		if n++; n == maxStackFrames {
			break
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// syntaxError converts a goja parse or compile error.
func syntaxError(err error, col1 int, mapPos func(int, int) (int, int, bool)) *fault.Error {
	fe := &fault.Error{Kind: fault.KindSyntax, Cause: err}
	line, col := 0, 0
	var list parser.ErrorList
	var pe *parser.Error
	var se *goja.CompilerSyntaxError
	switch {
	case errors.As(err, &list) && len(list) > 0:
		fe.Message = "SyntaxError: " + list[0].Message
		line, col = list[0].Position.Line, list[0].Position.Column
	case errors.As(err, &pe):
		fe.Message = "SyntaxError: " + pe.Message
		line, col = pe.Position.Line, pe.Position.Column
	case errors.As(err, &se):
		fe.Message = "SyntaxError: " + se.Message
		if se.File != nil {
			p := se.File.Position(se.Offset)
			line, col = p.Line, p.Column
		}
	default:
		fe.Message = "SyntaxError: " + err.Error()
	}
	if line > 0 {
		if line == 1 && col1 > 0 {
			col -= col1
			if col < 1 {
				col = 1
			}
		}
		if mapPos != nil {
			if l, c, ok := mapPos(line, col); ok {
				line, col = l, c
			}
		}
		fe.Line, fe.Column = line, col
	}
	return fe
}
