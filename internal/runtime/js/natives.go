package js

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"

	"github.com/dop251/goja"
)

// native returns a Go function as a JS function that looks like any
// built-in: `name` and `length` set, and String(f) giving
// "function name() { [native code] }" (goja names functions made from Go
// after their Go symbol otherwise).
func (x *exec) native(name string, length int, f func(goja.FunctionCall) goja.Value) *goja.Object {
	fn := x.vm.ToValue(f).(*goja.Object)
	_ = fn.DefineDataProperty("name", x.vm.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	_ = fn.DefineDataProperty("length", x.vm.ToValue(length), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	return fn
}

// method replaces holder[name], a built-in method, with a plain native
// function whose calls run wrap: wrap receives the call and the original's
// Go function. Each call counts as one level of built-in recursion
// (enter). The replacement reads as the original: the same name and
// length (with the same attributes), no prototype, not a constructor, the
// same native string form, and the original's name in stack traces (a
// Proxy would show as "proxy" there, and a proxy of it would not print).
// The property keeps its attributes (writable, configurable, not
// enumerable). It returns the original's Go function, or nil (and does
// nothing) if holder[name] is not a built-in function.
func (x *exec) method(holder *goja.Object, name string, wrap func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value) func(goja.FunctionCall) goja.Value {
	if holder == nil {
		return nil
	}
	fn, orig := x.wrapMethod(holder.Get(name), wrap)
	if fn != nil {
		_ = holder.DefineDataProperty(name, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	return orig
}

// wrapMethod returns the stand-in of v, a built-in function, whose calls
// run wrap, and v's Go function; nil if v is not a built-in function.
func (x *exec) wrapMethod(v goja.Value, wrap func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value) (*goja.Object, func(goja.FunctionCall) goja.Value) {
	origObj, ok := v.(*goja.Object)
	if !ok {
		return nil, nil
	}
	orig, ok := origObj.Export().(func(goja.FunctionCall) goja.Value)
	if !ok {
		return nil, nil
	}
	what := "a built-in"
	name := origObj.Get("name")
	if name != nil && name.String() != "" {
		what = name.String()
	}
	fn := x.vm.ToValue(func(call goja.FunctionCall) goja.Value {
		x.enter(what)
		v, thrown := callWrap(wrap, call, orig)
		x.nativeDepth--
		if thrown != nil {
			x.rethrowBuiltin(what, thrown)
		}
		return v
	}).(*goja.Object)
	if name != nil {
		_ = fn.DefineDataProperty("name", name, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	if length := origObj.Get("length"); length != nil {
		_ = fn.DefineDataProperty("length", length, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	x.wrappers[fn] = origObj
	if x.standIns[origObj] == nil {
		x.standIns[origObj] = fn
	}
	return fn, orig
}

// fnProxy returns a proxy of the built-in function fn with cfg's traps
// (Apply, Construct), standing for fn: instanceof asks fn, fn's
// Symbol.species getter answers the proxy, and Function.prototype.toString
// prints fn.
func (x *exec) fnProxy(fn *goja.Object, cfg *goja.ProxyTrapConfig) *goja.Object {
	var p *goja.Object
	var hasInstance goja.Value
	cfg.GetSym = func(target *goja.Object, sym *goja.Symbol, receiver goja.Value) goja.Value {
		v := target.GetSymbol(sym)
		if o, ok := v.(*goja.Object); ok {
			switch {
			case o == target:
				return receiver // a species getter's `this`
			case sym == goja.SymHasInstance && o == x.hasInstance && x.rawHasInstance != nil:
				// goja's instanceof rejects a proxy: ask fn itself.
				if hasInstance == nil {
					hasInstance = x.native("[Symbol.hasInstance]", 1, func(call goja.FunctionCall) goja.Value {
						return x.rawHasInstance(goja.FunctionCall{This: fn, Arguments: call.Arguments})
					})
				}
				return hasInstance
			}
		}
		return v
	}
	p = x.vm.ToValue(x.vm.NewProxy(fn, cfg)).(*goja.Object)
	x.wrappers[p] = fn
	return p
}

// callWrap runs wrap and returns what it returned or threw (nil if it
// returned). The panic ends here and the caller throws anew: a deferred
// function that recovers and panics again would chain the new panic to
// the old one, and a RangeError unwinding thousands of nested built-ins
// would take quadratic time.
func callWrap(wrap func(goja.FunctionCall, func(goja.FunctionCall) goja.Value) goja.Value, call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) (v goja.Value, thrown any) {
	defer func() {
		if r := recover(); r != nil {
			thrown = r
		}
	}()
	return wrap(call, orig), nil
}

// rethrowBuiltin throws again what the guarded built-in what threw, a Go
// runtime error raised inside goja's built-in as a catchable error that
// says what failed without Go's words: an allocation of a size no slice
// can have (BigInt.asUintN(2**53 - 1, -1n)) as a RangeError, anything
// else (a sort comparator that empties the array it sorts, say) as a
// TypeError.
func (x *exec) rethrowBuiltin(what string, thrown any) {
	if e, ok := thrown.(goruntime.Error); ok {
		if allocationSize(e) {
			x.throwRange(fmt.Sprintf("%s: the value it would build is too large; work with smaller values", what))
		}
		panic(x.vm.NewTypeError(fmt.Sprintf("%s: the built-in function failed on its arguments", what)))
	}
	panic(thrown)
}

// allocationSize reports whether e is the runtime's refusal of a slice
// size (makeslice or growslice: len or cap out of range). Go gives these
// no type of their own; the text is the runtime's.
func allocationSize(e goruntime.Error) bool {
	m := e.Error()
	return strings.Contains(m, "len out of range") || strings.Contains(m, "cap out of range")
}

// throwRange throws a RangeError with msg.
func (x *exec) throwRange(msg string) { panic(x.intrinsicError(x.rangeError(), msg)) }

// throwSyntax throws a SyntaxError with msg.
func (x *exec) throwSyntax(msg string) { panic(x.intrinsicError(x.rawSyntaxError, msg)) }

// intrinsicError returns a new error made by make (a built-in failing on
// purpose: its error is an instance of the built-in constructor, whatever
// the script did to the globals; make may panic with it or return it),
// with its message set to msg. Its stack is the script's current one
// (goja formats it on first read, with the message set here).
func (x *exec) intrinsicError(make func() goja.Value, msg string) goja.Value {
	var v goja.Value
	if make != nil {
		v = catchValue(make)
	}
	obj, ok := v.(*goja.Object)
	if !ok {
		return x.vm.NewTypeError(msg)
	}
	_ = obj.DefineDataProperty("message", x.vm.ToValue(msg), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	return obj
}

// catchValue runs f and returns the value it returned or threw.
func catchValue(f func() goja.Value) (v goja.Value) {
	defer func() {
		switch e := recover().(type) {
		case nil:
		case goja.Value:
			v = e
		case *goja.Exception:
			v = e.Value()
		default:
			panic(e)
		}
	}()
	return f()
}

// rethrow panics with err, a failure returned by a goja call made from a
// native function, so that it propagates to the script as it came.
func rethrow(err error) {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		panic(ex)
	}
	panic(err)
}

// nilSafe is v, or undefined for the nil that goja's Get returns for a
// missing property.
func nilSafe(v goja.Value) goja.Value {
	if v == nil {
		return goja.Undefined()
	}
	return v
}
