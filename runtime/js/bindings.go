package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/tools"
)

// toolsObject builds the `tools` object: one function per tool, dotted
// names as nested namespaces, each namespace wrapped in a proxy so that an
// unknown name gives a clear unknown_tool error instead of "is not a
// function".
func (x *exec) toolsObject() goja.Value {
	root := &nsNode{children: map[string]*nsNode{}}
	for _, name := range x.job.Tools.Names() {
		n := root
		parts := strings.Split(name, ".")
		for _, p := range parts[:len(parts)-1] {
			c, ok := n.children[p]
			if !ok {
				c = &nsNode{children: map[string]*nsNode{}}
				n.children[p] = c
			}
			n = c
		}
		n.tools = append(n.tools, parts[len(parts)-1])
	}
	return x.namespace(root, "", true)
}

// nsNode is one level of the tools namespace.
type nsNode struct {
	tools    []string
	children map[string]*nsNode
}

func (x *exec) namespace(n *nsNode, prefix string, top bool) goja.Value {
	vm := x.vm
	obj := vm.NewObject()
	for _, t := range n.tools {
		_ = obj.Set(t, x.toolFunc(prefix+t))
	}
	for name, c := range n.children {
		_ = obj.Set(name, x.namespace(c, prefix+name+".", false))
	}
	if top {
		x.defineHelpers(obj, x.job.Tools)
	}
	proxy := vm.NewProxy(obj, &goja.ProxyTrapConfig{
		Get: func(target *goja.Object, property string, receiver goja.Value) goja.Value {
			if v := target.Get(property); v != nil {
				return v
			}
			// "then" must stay undefined so that `await tools` works;
			// "$…" names are reserved for helpers.
			if property == "then" || property == "toJSON" || strings.HasPrefix(property, "$") {
				return goja.Undefined()
			}
			return x.toolFunc(prefix + property)
		},
	})
	return vm.ToValue(proxy)
}

// defineHelpers adds tools.$search(query, limit) and tools.$describe(name),
// which resolve to plain JSON values (not enumerable, so they do not show
// up as tools).
func (x *exec) defineHelpers(root *goja.Object, d bridge.Caller) {
	vm := x.vm
	settle := func(v any, err error) goja.Value {
		p, resolve, reject := vm.NewPromise()
		if err != nil {
			_ = reject(x.callError(err))
			return vm.ToValue(p)
		}
		b, _ := json.Marshal(v)
		jv, perr := x.fromJSON(b)
		if perr != nil {
			_ = reject(vm.ToValue(perr.Error()))
		} else {
			_ = resolve(jv)
		}
		return vm.ToValue(p)
	}
	search := vm.ToValue(func(call goja.FunctionCall) goja.Value {
		q := call.Argument(0)
		if goja.IsUndefined(q) || goja.IsNull(q) {
			return settle(nil, &bridge.CallError{Name: bridge.NameArgumentError, Tool: "$search", Code: tools.CodeInvalidArguments, Message: "tools.$search(query, limit?) needs a query string"})
		}
		limit := 10
		if l := call.Argument(1); !goja.IsUndefined(l) {
			limit = int(l.ToInteger())
		}
		hits := d.Search(q.String(), limit)
		if hits == nil {
			hits = []bridge.SearchHit{}
		}
		return settle(hits, nil)
	})
	describe := vm.ToValue(func(call goja.FunctionCall) goja.Value {
		name := call.Argument(0).String()
		desc, ok := d.Describe(name)
		if !ok {
			return settle(nil, &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeUnknownTool,
				Message: fmt.Sprintf("unknown tool %q; use tools.$search(query) to find tools", name)})
		}
		return settle(desc, nil)
	})
	_ = root.DefineDataProperty("$search", search, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	_ = root.DefineDataProperty("$describe", describe, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
}

// toolFunc returns the JS function for one tool: it converts the argument
// to JSON, starts the call through the bridge (synchronously, so calls are
// numbered in script order) and returns a promise settled on the VM
// goroutine when the call completes.
func (x *exec) toolFunc(name string) goja.Value {
	return x.vm.ToValue(func(call goja.FunctionCall) goja.Value {
		vm := x.vm
		p, resolve, reject := vm.NewPromise()
		arg := call.Argument(0)
		var args json.RawMessage
		if goja.IsUndefined(arg) {
			args = json.RawMessage("{}")
		} else {
			s, err := x.stringify(goja.Undefined(), arg)
			if err != nil {
				if isUncatchable(err) {
					panic(err)
				}
				var ex *goja.Exception
				msg := err.Error()
				if errors.As(err, &ex) {
					msg = x.describe(ex.Value())
				}
				_ = reject(x.callError(&bridge.CallError{Name: bridge.NameArgumentError, Tool: name,
					Code: tools.CodeInvalidArguments, Message: "arguments cannot be converted to JSON: " + msg}))
				return vm.ToValue(p)
			}
			if s == nil || goja.IsUndefined(s) {
				args = json.RawMessage("{}")
			} else {
				args = json.RawMessage(s.String())
			}
		}
		if x.aw != nil {
			// The Caller answers calls itself: the answer is awaited on
			// this goroutine when the VM goes idle (see await).
			t := x.aw.Begin(x.ctx, name, args)
			if x.tickets == nil {
				x.tickets = map[uint32]queuedCall{}
			}
			x.tickets[t] = queuedCall{resolve: resolve, reject: reject}
			return vm.ToValue(p)
		}
		inv := x.job.Tools.Start(x.ctx, name, args)
		c := queuedCall{inv: inv, resolve: resolve, reject: reject}
		if x.job.Tools.Inline(name) {
			// Deferred: if it is the only thing the script waits for when
			// the VM goes idle, it runs right there (see flush).
			x.queued = append(x.queued, c)
		} else {
			x.spawn(c)
		}
		return vm.ToValue(p)
	})
}

// queuedCall is a started call not yet handed to a goroutine.
type queuedCall struct {
	inv             bridge.Invocation
	resolve, reject func(any) error
}

// spawn runs a call on its own goroutine. The goroutine ends when the
// invocation returns (the execution's context bounds it) and its result
// is handed over, or dropped once the execution has finished.
func (x *exec) spawn(c queuedCall) {
	x.pending++
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		out, err := c.inv()
		select {
		case x.done <- completion{resolve: c.resolve, reject: c.reject, out: out, err: err}:
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
		return completion{resolve: c.resolve, reject: c.reject, out: out, err: err}, true
	}
	for _, c := range x.queued {
		x.spawn(c)
	}
	x.queued = x.queued[:0]
	return completion{}, false
}

// awaiter is implemented by a bridge.Caller whose calls are answered by
// messages it receives — a worker's call proxy, whose calls run in the
// supervisor — rather than by running Invocations. The engine then waits
// for the answers itself, on the VM goroutine and for any of its calls at
// once: no goroutine per call and no hand-off between threads, which cost
// more than the call itself when the answer crosses a process boundary.
// It is how the engine waits, not something a script can see: every
// Caller works without it.
type awaiter interface {
	// Begin starts a call as Start does (numbered in the order of Begin
	// calls) and returns its ticket, never 0; the call's answer comes
	// from Await. A call to an inline tool may be held back until the
	// next Await, so that calls made together go out together.
	Begin(ctx context.Context, name string, args json.RawMessage) (ticket uint32)
	// Await sends what Begin held back, then waits for the answer to any
	// call begun and not yet answered, in the order the answers arrive:
	// its ticket, and its JSON result or *bridge.CallError. When ctx ends
	// first it returns ticket 0 and ctx's error; answers to calls never
	// awaited are dropped.
	Await(ctx context.Context) (ticket uint32, result json.RawMessage, err error)
}

// await waits, on the VM goroutine, for the answer to any call begun
// through the job's awaiter, and returns it for delivery; an error means
// the execution's context ended.
func (x *exec) await() (completion, error) {
	for {
		t, out, err := x.aw.Await(x.ctx)
		if t == 0 {
			return completion{}, err
		}
		c, ok := x.tickets[t]
		if !ok {
			continue
		}
		delete(x.tickets, t)
		return completion{resolve: c.resolve, reject: c.reject, out: out, err: err}, nil
	}
}

// callError makes the JS error object for a failed call: an Error with
// name, tool, code, message and (for schema failures) errors.
func (x *exec) callError(err error) goja.Value {
	vm := x.vm
	var ce *bridge.CallError
	if !errors.As(err, &ce) {
		ce = &bridge.CallError{Name: bridge.NameToolError, Code: tools.CodeToolFailed, Message: err.Error()}
	}
	obj, e := vm.New(vm.Get("Error"), vm.ToValue(ce.Message))
	if e != nil {
		obj = vm.NewObject()
		_ = obj.Set("message", ce.Message)
	}
	_ = obj.Set("name", ce.Name)
	_ = obj.Set("tool", ce.Tool)
	_ = obj.Set("code", ce.Code)
	if len(ce.Errors) > 0 {
		b, _ := json.Marshal(ce.Errors)
		if v, err := x.parse(goja.Undefined(), vm.ToValue(string(b))); err == nil {
			_ = obj.Set("errors", v)
		}
	}
	if x.callErrs == nil {
		x.callErrs = map[*goja.Object]*bridge.CallError{}
	}
	x.callErrs[obj] = ce
	return obj
}

// consoleObject builds `console`: log, info, warn, error and debug write to
// the execution's capped log buffer.
func (x *exec) consoleObject() goja.Value {
	vm := x.vm
	obj := vm.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		level := level
		_ = obj.Set(level, func(call goja.FunctionCall) goja.Value {
			if x.job.Logs == nil || x.job.Logs.Full() {
				return goja.Undefined()
			}
			var b strings.Builder
			for i, a := range call.Arguments {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(x.format(a))
				if int64(b.Len()) > x.job.Limits.MaxLogBytes && x.job.Limits.MaxLogBytes > 0 {
					break
				}
			}
			x.job.Logs.Write(level, b.String())
			return goja.Undefined()
		})
	}
	return obj
}

// format renders one console argument: strings as they are, other values
// as JSON where possible.
func (x *exec) format(v goja.Value) string {
	if s, ok := v.Export().(string); ok {
		return s
	}
	if obj, ok := v.(*goja.Object); ok && !isErrorObject(v) {
		if _, isFn := goja.AssertFunction(obj); !isFn {
			if j, err := x.stringify(goja.Undefined(), obj); err == nil && j != nil && !goja.IsUndefined(j) {
				return j.String()
			} else if err != nil && isUncatchable(err) {
				panic(err)
			}
		}
	}
	var s string
	if ex := x.vm.Try(func() { s = v.String() }); ex != nil {
		return "[value that cannot be printed]"
	}
	return s
}

// guardBuiltins puts size guards on string built-ins that allocate in one
// native step (and so cannot be interrupted): an oversized request throws
// a catchable RangeError instead of exhausting memory.
func (x *exec) guardBuiltins() {
	vm := x.vm
	strProto := vm.Get("String").ToObject(vm).Get("prototype").ToObject(vm)
	guard := func(method string, size func(this goja.Value, args []goja.Value) float64) {
		orig, ok := goja.AssertFunction(strProto.Get(method))
		if !ok {
			return
		}
		fn := vm.ToValue(func(call goja.FunctionCall) goja.Value {
			// The limit is the job's, read when called: the runtime may
			// have been made before the job (Warm).
			if n, maxChars := size(call.This, call.Arguments), x.maxStringChars(); n > float64(maxChars) {
				panic(x.rangeError(fmt.Sprintf("String.prototype.%s would build a string of %.0f characters, more than the %d the memory limit allows", method, n, maxChars)))
			}
			v, err := orig(call.This, call.Arguments...)
			if err != nil {
				panic(err)
			}
			return v
		})
		_ = strProto.DefineDataProperty(method, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	thisLen := func(this goja.Value) float64 {
		if s, ok := this.Export().(string); ok {
			return float64(len(s))
		}
		return 0
	}
	guard("repeat", func(this goja.Value, args []goja.Value) float64 {
		if len(args) == 0 {
			return 0
		}
		n := args[0].ToFloat()
		if math.IsNaN(n) || n < 0 {
			return 0
		}
		return thisLen(this) * n
	})
	pad := func(this goja.Value, args []goja.Value) float64 {
		if len(args) == 0 {
			return 0
		}
		return args[0].ToFloat()
	}
	guard("padStart", pad)
	guard("padEnd", pad)
}

// maxStringChars is the largest string a guarded built-in may build: half
// the memory limit (strings may take two bytes a character), at most 256 Mi.
func (x *exec) maxStringChars() int64 {
	const hard = 256 << 20
	m := x.job.Limits.MemoryBytes / 2
	if m <= 0 || m > hard {
		m = hard
	}
	return m
}

func (x *exec) rangeError(msg string) goja.Value {
	obj, err := x.vm.New(x.vm.Get("RangeError"), x.vm.ToValue(msg))
	if err != nil {
		return x.vm.ToValue(msg)
	}
	return obj
}
