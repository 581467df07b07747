package worker

import (
	"errors"
	"fmt"
	"math"

	"github.com/dop251/goja"
)

// The guards below complement the string guards of runtime/js: built-ins
// that allocate in one native step, or fill memory in a native loop that
// goja cannot interrupt, get a size check that throws a catchable
// RangeError before the allocation.
//
// Each check assumes 16 bytes per array element (goja stores every element
// as an interface value) and compares with the execution's memory limit.
//
// ArrayBuffer and the typed-array constructors are not guarded: wrapping
// them makes goja build them (and their prototypes) in every execution,
// which costs more than the rest of a trivial execution. One oversized
// buffer is a single allocation that RLIMIT_DATA refuses: the worker dies
// and the execution ends with MEMORY_LIMIT (see deathError); in-process,
// the watchdog reports it after the allocation.
//
// Array.prototype.toString is not guarded itself: it calls this.join, which
// is (wrapping it would also part it from %TypedArray%.prototype.toString,
// the same function by the standard).
//
// The guards are invisible to a script: each is a native function, as the
// built-in it stands for, with the built-in's name, length and property
// attributes, so it has no prototype, is not a constructor, and
// Function.prototype.toString gives the built-in's native form; a script
// sees the same built-ins in a worker as in-process (the parity test
// walks them). They call the built-in's own Go function, so a guarded call
// has one native frame, as an unguarded one has.
//
// They are installed in each runtime before its job, when the worker makes
// the runtime ahead (executor.warm), and read the memory limit of the job
// the runtime then runs.

// installGuards puts the size guards on a fresh runtime; they read the
// memory limit from *limit when called.
func installGuards(vm *goja.Runtime, limit *int64) error {
	array, ok := vm.Get("Array").(*goja.Object)
	if !ok {
		return errors.New("worker: no Array constructor to guard")
	}
	proto, ok := array.Get("prototype").(*goja.Object)
	if !ok {
		return errors.New("worker: no Array.prototype to guard")
	}
	rangeError, ok := goja.AssertConstructor(vm.Get("RangeError"))
	if !ok {
		return errors.New("worker: no RangeError constructor")
	}
	isArrayFn, ok := native(array.Get("isArray"))
	if !ok {
		return errors.New("worker: Array.isArray is not a built-in")
	}
	isArray := func(v goja.Value) bool {
		return isArrayFn(goja.FunctionCall{This: array, Arguments: []goja.Value{v}}).ToBoolean()
	}
	// length is the length of an array-like, 0 when it has none or
	// reading it throws.
	length := func(o goja.Value) float64 {
		if o == nil || goja.IsUndefined(o) || goja.IsNull(o) {
			return 0
		}
		n := 0.0
		if vm.Try(func() { n = o.ToObject(vm).Get("length").ToFloat() }) != nil || !(n > 0) {
			return 0
		}
		return n
	}
	// integer is ToIntegerOrInfinity as the guards always computed it:
	// NaN, ±0 and ±Infinity count as 0.
	integer := func(v goja.Value) float64 {
		x := v.ToFloat()
		x -= math.Mod(x, 1)
		if math.IsNaN(x) {
			return 0
		}
		return x
	}
	// span is the number of elements from argument si to argument ei of
	// a call on o, as Array.prototype.fill clamps them.
	span := func(o goja.Value, a []goja.Value, si, ei int) float64 {
		l := length(o)
		s, e := 0.0, l
		if len(a) > si {
			s = integer(a[si])
		}
		if len(a) > ei && !goja.IsUndefined(a[ei]) {
			e = integer(a[ei])
		}
		s = clampIndex(s, l)
		e = clampIndex(e, l)
		if e > s {
			return e - s
		}
		return 0
	}
	guard := func(obj *goja.Object, name string, size func(this goja.Value, a []goja.Value) float64, what string) error {
		orig, ok := native(obj.Get(name))
		if !ok {
			return fmt.Errorf("worker: %s is not a built-in", what)
		}
		origFn := obj.Get(name).(*goja.Object)
		f := vm.ToValue(func(call goja.FunctionCall) goja.Value {
			if n, max := size(call.This, call.Arguments), *limit; n > float64(max) {
				msg := fmt.Sprintf("%s would need about %d MiB, more than the memory limit of %d MiB allows; work on smaller pieces",
					what, int64(n/(1<<20)), max>>20)
				e, err := rangeError(nil, vm.ToValue(msg))
				if err != nil {
					panic(err)
				}
				panic(e)
			}
			return orig(call)
		}).(*goja.Object)
		for _, p := range []string{"length", "name"} {
			// Not writable, configurable, not enumerable: as on built-ins.
			if err := f.DefineDataProperty(p, origFn.Get(p), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				return err
			}
		}
		// Writable, configurable, not enumerable: as the built-in.
		return obj.DefineDataProperty(name, f, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	if err := guard(proto, "fill", func(this goja.Value, a []goja.Value) float64 {
		if !isArray(this) {
			return 0
		}
		return span(this, a, 1, 2) * 16
	}, "Array.prototype.fill"); err != nil {
		return err
	}
	if err := guard(proto, "join", func(this goja.Value, a []goja.Value) float64 {
		sep := 2.0
		if len(a) > 0 && !goja.IsUndefined(a[0]) {
			sep = float64(len(a[0].String())) * 2
		}
		return length(this) * (16 + sep)
	}, "Array.prototype.join"); err != nil {
		return err
	}
	return guard(array, "from", func(_ goja.Value, a []goja.Value) float64 {
		if len(a) == 0 {
			return 0
		}
		o, ok := a[0].(*goja.Object)
		if !ok || isCallable(o) || isArray(o) {
			return 0
		}
		return length(o) * 16
	}, "Array.from")
}

// native returns the Go function of a built-in function value.
func native(v goja.Value) (func(goja.FunctionCall) goja.Value, bool) {
	o, ok := v.(*goja.Object)
	if !ok {
		return nil, false
	}
	f, ok := o.Export().(func(goja.FunctionCall) goja.Value)
	return f, ok
}

// isCallable reports whether typeof o is "function".
func isCallable(o *goja.Object) bool {
	_, ok := goja.AssertFunction(o)
	return ok
}

// clampIndex clamps a relative index (negative counts from the end) to
// [0, l].
func clampIndex(x, l float64) float64 {
	if x < 0 {
		return math.Max(l+x, 0)
	}
	return math.Min(x, l)
}

// guardLimit is the memory limit the guards hold a job to.
func guardLimit(memBytes int64) int64 {
	if memBytes <= 0 || memBytes > maxGuardBytes {
		return maxGuardBytes
	}
	return memBytes
}

// maxGuardBytes bounds the guards' notion of memory when no limit is set.
const maxGuardBytes = 4 << 30
