package js

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/bridge"
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
			_ = reject(x.callError(err, x.callSite()))
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
	search := x.native("$search", 2, func(call goja.FunctionCall) goja.Value {
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
	describe := x.native("$describe", 1, func(call goja.FunctionCall) goja.Value {
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
	short := name[strings.LastIndexByte(name, '.')+1:]
	return x.native(short, 1, func(call goja.FunctionCall) goja.Value {
		vm := x.vm
		p, resolve, reject := vm.NewPromise()
		site := x.callSite()
		arg := call.Argument(0)
		var args json.RawMessage
		if goja.IsUndefined(arg) {
			args = json.RawMessage("{}")
		} else {
			s, err := x.argumentsJSON(arg)
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
					Code: tools.CodeInvalidArguments, Message: "arguments cannot be converted to JSON: " + msg}, site))
				return vm.ToValue(p)
			}
			if s == nil {
				args = json.RawMessage("{}")
			} else {
				args = s
			}
		}
		if x.aw != nil {
			// The Caller answers calls itself: the answer is awaited on
			// this goroutine when the VM goes idle (see await).
			t := x.aw.Begin(x.ctx, name, args)
			if x.tickets == nil {
				x.tickets = map[uint32]queuedCall{}
			}
			x.tickets[t] = queuedCall{resolve: resolve, reject: reject, site: site}
			return vm.ToValue(p)
		}
		inv := x.job.Tools.Start(x.ctx, name, args)
		c := queuedCall{inv: inv, resolve: resolve, reject: reject, site: site}
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

// callSite returns the script's innermost frame on the stack: where it
// calls a tool (a zero frame when the script's code is not on the stack).
// The frame is kept, not formatted: a call that succeeds never needs its
// position.
func (x *exec) callSite() goja.StackFrame {
	x.frames = x.vm.CaptureCallStack(maxSiteFrames, x.frames[:0])
	for _, f := range x.frames {
		if f.SrcName() == x.c.file {
			return f
		}
	}
	return goja.StackFrame{}
}

// maxSiteFrames bounds the frames callSite looks at: the tool function's
// own native frame, then the script's.
const maxSiteFrames = 4

// callError makes the Error a failed call rejects with: name, tool, code,
// message and, for argument errors, errors. Its stack is the call site, so
// an uncaught one is reported at the line that made the call and a script
// that catches it can print where.
func (x *exec) callError(err error, site goja.StackFrame) goja.Value {
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
		if v, err := x.parseJSON(string(b)); err == nil {
			_ = obj.Set("errors", v)
		}
	}
	if site.SrcName() == x.c.file {
		pos := site.Position()
		_ = obj.DefineDataProperty("stack", vm.ToValue(fmt.Sprintf("%s: %s\n\tat %s:%d:%d", ce.Name, ce.Message, x.c.file, pos.Line, pos.Column)),
			goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	}
	if x.callErrs == nil {
		x.callErrs = map[*goja.Object]*bridge.CallError{}
	}
	x.callErrs[obj] = ce
	return obj
}

// await waits, on the VM goroutine, for the answer to any call begun
// through the job's bridge.Awaiter, and returns it for delivery; an error means
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
		return completion{resolve: c.resolve, reject: c.reject, out: out, err: err, site: c.site}, nil
	}
}
