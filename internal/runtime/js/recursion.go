package js

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dop251/goja"
)

// maxNativeDepth bounds how deeply built-in functions may call each other
// without a JavaScript function in between (a nested array's join calling
// its elements' toString, Object.prototype.toLocaleString installed as an
// object's toString calling itself, a getter that is a built-in reading
// the property it is the getter of, a bound function calling a bound
// function, a proxy forwarding to a proxy). goja counts JavaScript frames
// against the call-stack limit, but not the Go frames of built-ins calling
// built-ins: such a chain recurses on the Go stack until it overflows,
// which kills the process. Every built-in a script can reach counts its
// calls (natives.go, builtins.go); past this depth they throw a
// RangeError.
const maxNativeDepth = 3000

// enter counts one level of built-in recursion; what names the built-in
// in the error. Pair it with leave (deferred, so that
// exceptions unwind the count).
func (x *exec) enter(what string) {
	if x.nativeDepth >= maxNativeDepth {
		x.throwRange(fmt.Sprintf("Maximum call stack size exceeded: %s nested more than %d built-in calls deep", what, maxNativeDepth))
	}
	x.nativeDepth++
}

func (x *exec) leave() { x.nativeDepth-- }

// guardRecursion bounds the built-ins whose recursion a count per call
// does not catch: flat (one call recursing into a nested array), bind
// (chains of bound functions built one by one), and
// Function.prototype.toString, which prints guarded built-ins as the
// originals.
func (x *exec) guardRecursion() {
	x.method(x.proto("Array"), "flat", x.flat)
	fnProto := x.proto("Function")
	x.method(fnProto, "bind", x.bind)
	x.method(fnProto, "toString", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		if obj, ok := call.This.(*goja.Object); ok {
			if p, isProxy := obj.Export().(goja.Proxy); isProxy {
				if o, ok := x.wrappers[obj]; ok {
					// A built-in behind a guarding proxy prints as the
					// built-in.
					call.This = o
				} else if t := p.Target(); t != nil && x.wrappers[t] != nil {
					// A proxy of it prints as goja prints a proxy of a
					// function (it throws for a proxy of a proxy).
					return x.vm.ToValue("function () { [native code] }")
				}
			}
		}
		return orig(call)
	})
}

// guardReflect checks the size of the argument lists of Reflect.apply and
// Reflect.construct (their calls count like every built-in's).
func (x *exec) guardReflect() {
	reflect, ok := x.vm.Get("Reflect").(*goja.Object)
	if !ok {
		return
	}
	for _, m := range []string{"apply", "construct"} {
		what := "Reflect." + m
		// The argument list is Reflect.apply's third argument and
		// Reflect.construct's second.
		list := map[string]int{"apply": 2, "construct": 1}[m]
		x.method(reflect, m, func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
			if len(call.Arguments) > list {
				args := append([]goja.Value(nil), call.Arguments...)
				args[list] = x.argList(args[list], what)
				call.Arguments = args
			}
			return orig(call)
		})
	}
	x.countBuiltins("Reflect", reflect)
}

// proto returns the prototype object of the global constructor name.
func (x *exec) proto(name string) *goja.Object {
	ctor, ok := x.vm.Get(name).(*goja.Object)
	if !ok {
		return nil
	}
	p, _ := ctor.Get("prototype").(*goja.Object)
	return p
}

// flat keeps Array.prototype.flat's recursion within maxNativeDepth: a
// larger depth (Infinity, typically) flattens maxNativeDepth levels and
// throws a RangeError if arrays remain nested below them.
func (x *exec) flat(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
	depth := 1.0
	if d := call.Argument(0); !goja.IsUndefined(d) {
		depth = d.ToFloat() // converted once, here
		if depth != depth {
			depth = 0
		}
	}
	// The receiver and the arrays nested in it are walked through views
	// that count their lengths (scans.go).
	const what = "Array.prototype.flat"
	if call.This == nil || goja.IsUndefined(call.This) || goja.IsNull(call.This) {
		return orig(call)
	}
	obj := call.This.ToObject(x.vm)
	n := lengthOf(obj)
	x.checkScan(what, n)
	levels := math.Max(0, math.Min(toInteger(depth), maxNativeDepth)) // as the built-in counts them
	view := x.flatView(obj, n, levels, &n, what)
	if depth <= maxNativeDepth {
		return orig(goja.FunctionCall{This: view, Arguments: []goja.Value{x.vm.ToValue(depth)}})
	}
	res := orig(goja.FunctionCall{This: view, Arguments: []goja.Value{x.vm.ToValue(maxNativeDepth)}})
	// Arrays left in the result were nested deeper than that.
	if arr, ok := res.(*goja.Object); ok {
		n := arr.Get("length").ToInteger()
		for i := int64(0); i < n; i++ {
			v := x.isArray(goja.FunctionCall{Arguments: []goja.Value{arr.Get(strconv.FormatInt(i, 10))}})
			if v.ToBoolean() {
				x.throwRange(fmt.Sprintf("Array.prototype.flat: the array nests more than %d levels deep", maxNativeDepth))
			}
		}
	}
	return res
}

// bind makes bound functions whose calls are counted: the bound target is
// a proxy of the real one that counts each call, so that a chain of bound
// built-ins (String bound to an object whose toString is bound to the
// next…) cannot recurse without bound. A function bound to a function
// bound by this bind is not proxied again, but chains of bind are limited
// to maxNativeDepth.
func (x *exec) bind(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
	target, ok := call.This.(*goja.Object)
	if !ok {
		return orig(call)
	}
	if _, ok := goja.AssertFunction(target); !ok {
		return orig(call) // throws the TypeError
	}
	depth, bound := x.bound[target]
	if bound {
		if depth >= maxNativeDepth {
			x.throwRange(fmt.Sprintf("Function.prototype.bind: more than %d functions bound to each other", maxNativeDepth))
		}
	} else {
		call.This = x.countedCallable(target, "bound function")
	}
	res := orig(call)
	if fn, ok := res.(*goja.Object); ok {
		x.bound[fn] = depth + 1
	}
	return res
}

// countedCallable returns a proxy of fn whose calls and constructions
// count as one level of built-in recursion.
func (x *exec) countedCallable(fn *goja.Object, what string) *goja.Object {
	raw, _ := fn.Export().(func(goja.FunctionCall) goja.Value)
	callable, _ := goja.AssertFunction(fn)
	construct, _ := goja.AssertConstructor(fn)
	cfg := &goja.ProxyTrapConfig{
		Apply: func(_ *goja.Object, this goja.Value, args []goja.Value) goja.Value {
			x.enter(what)
			defer x.leave()
			if raw != nil {
				return raw(goja.FunctionCall{This: this, Arguments: args})
			}
			v, err := callable(this, args...)
			if err != nil {
				rethrow(err)
			}
			return v
		},
	}
	var p *goja.Object
	if construct != nil {
		cfg.Construct = func(_ *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			x.enter(what)
			defer x.leave()
			if newTarget == nil || newTarget == p {
				newTarget = fn
			}
			v, err := construct(newTarget, args...)
			if err != nil {
				rethrow(err)
			}
			return v
		}
	}
	p = x.fnProxy(fn, cfg)
	return p
}

// guardProxy limits chains of proxies: a proxy's target or handler may be
// a proxy, and an operation on it forwards from proxy to proxy in Go
// without a JavaScript frame. Every proxy a script creates (new Proxy,
// Proxy.revocable) records its depth; creating one deeper than
// maxNativeDepth throws a RangeError.
func (x *exec) guardProxy() {
	g := x.vm.GlobalObject()
	orig, ok := g.Get("Proxy").(*goja.Object)
	if !ok {
		return
	}
	construct, ok := goja.AssertConstructor(orig)
	if !ok {
		return
	}
	depthOf := func(args []goja.Value) int {
		d := 0
		for _, a := range args[:min(len(args), 2)] {
			if o, ok := a.(*goja.Object); ok && x.proxies[o] > d {
				d = x.proxies[o]
			}
		}
		if d >= maxNativeDepth {
			x.throwRange(fmt.Sprintf("Proxy: more than %d proxies nested as targets or handlers", maxNativeDepth))
		}
		return d + 1
	}
	callable, _ := goja.AssertFunction(orig)
	wrapper := x.fnProxy(orig, &goja.ProxyTrapConfig{
		Apply: func(_ *goja.Object, this goja.Value, args []goja.Value) goja.Value {
			v, err := callable(this, args...) // throws: Proxy needs new
			if err != nil {
				rethrow(err)
			}
			return v
		},
		Construct: func(_ *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			d := depthOf(args)
			p, err := construct(orig, args...)
			if err != nil {
				rethrow(err)
			}
			x.proxies[p] = d
			return p
		},
	})
	x.method(orig, "revocable", func(call goja.FunctionCall, raw func(goja.FunctionCall) goja.Value) goja.Value {
		d := depthOf(call.Arguments)
		res := raw(call)
		if r, ok := res.(*goja.Object); ok {
			if p, ok := r.Get("proxy").(*goja.Object); ok {
				x.proxies[p] = d
			}
		}
		return res
	})
	_ = g.DefineDataProperty("Proxy", wrapper, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}
