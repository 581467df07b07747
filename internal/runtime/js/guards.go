package js

import (
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/dop251/goja"
)

// Size guards. goja's built-ins allocate in native code that the VM cannot
// interrupt: `"x".repeat(2**30)` or `new Array(2**32-1).join()` builds a
// huge string in one step, before any watchdog can react (in-process, the
// allocation itself can take the whole process down). The guards compute
// the size an operation would allocate from its arguments and throw a
// catchable RangeError when it is more than the execution's memory limit
// allows.
//
// Each guard converts the arguments it inspects exactly once and passes
// the converted values on, so that a valueOf or getter cannot show the
// guard one size and the built-in another. Array methods read `length`
// without observable effect only on real arrays; on other objects (array
// likes, proxies) the guards read length once and hand the built-in a
// snapshot instead (see snapshot).

// elementBytes is what goja spends per array element (an interface
// value), the unit of the array guards.
const elementBytes = 16

// maxGuardBytes bounds the guards' notion of memory when the execution has
// no memory limit.
const maxGuardBytes = 4 << 30

// maxBytes is the largest allocation a guarded built-in may make: the
// execution's memory limit.
func (x *exec) maxBytes() float64 {
	m := x.job.Limits.MemoryBytes
	if m <= 0 || m > maxGuardBytes {
		m = maxGuardBytes
	}
	return float64(m)
}

// maxStringChars is the longest string a guarded built-in may build: half
// the memory limit (a character may take two bytes), at most 256 Mi.
func (x *exec) maxStringChars() float64 {
	return math.Min(x.maxBytes()/2, 256<<20)
}

// tooBig throws the RangeError of a guard: what would need bytes.
func (x *exec) tooBig(what string, bytes float64) {
	x.throwRange(fmt.Sprintf("%s would need about %.0f MiB, more than the memory limit of %.0f MiB allows; work on smaller pieces",
		what, bytes/(1<<20), x.maxBytes()/(1<<20)))
}

// checkChars throws if a string of n characters is too long.
func (x *exec) checkChars(what string, n float64) {
	if n > x.maxStringChars() {
		x.throwRange(fmt.Sprintf("%s would build a string of %.0f characters, more than the %.0f the memory limit allows",
			what, n, x.maxStringChars()))
	}
}

// guardBuiltins installs the size guards on the built-ins reachable from
// values (groupSizes, lazy.go).
func (x *exec) guardBuiltins() {
	x.guardStrings()
	x.guardArrays()
}

// thisString converts a String.prototype method's receiver once (null and
// undefined are left for the built-in to reject).
func thisString(call goja.FunctionCall) (goja.Value, int, bool) {
	if call.This == nil || goja.IsUndefined(call.This) || goja.IsNull(call.This) {
		return call.This, 0, false
	}
	s := call.This.ToString()
	return s, stringLength(s), true
}

// stringLength is the length of a string value in UTF-16 code units.
func stringLength(v goja.Value) int {
	if s, ok := v.(goja.String); ok {
		return s.Length()
	}
	return len(v.String())
}

// toInteger is ToIntegerOrInfinity of a number.
func toInteger(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return math.Trunc(f)
}

func (x *exec) guardStrings() {
	vm := x.vm
	proto := x.proto("String")
	x.method(proto, "repeat", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		s, n, ok := thisString(call)
		if !ok {
			return orig(call)
		}
		count := vm.ToValue(toInteger(call.Argument(0).ToFloat()))
		if c := count.ToFloat(); c > 0 && !math.IsInf(c, 1) {
			x.checkChars("String.prototype.repeat", float64(n)*c)
		}
		return orig(goja.FunctionCall{This: s, Arguments: []goja.Value{count}})
	})
	pad := func(name string) {
		x.method(proto, name, func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
			s, _, ok := thisString(call)
			if !ok {
				return orig(call)
			}
			max := vm.ToValue(toInteger(call.Argument(0).ToFloat()))
			args := []goja.Value{max}
			if len(call.Arguments) > 1 {
				fill := call.Arguments[1]
				if !goja.IsUndefined(fill) {
					fill = fill.ToString()
				}
				args = append(args, fill)
			}
			x.checkChars("String.prototype."+name, max.ToFloat())
			return orig(goja.FunctionCall{This: s, Arguments: args})
		})
	}
	pad("padStart")
	pad("padEnd")
	x.method(proto, "concat", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		s, n, ok := thisString(call)
		if !ok {
			return orig(call)
		}
		total := float64(n)
		args := make([]goja.Value, len(call.Arguments))
		for i, a := range call.Arguments {
			args[i] = a.ToString()
			total += float64(stringLength(args[i]))
		}
		x.checkChars("String.prototype.concat", total)
		return orig(goja.FunctionCall{This: s, Arguments: args})
	})
	x.guardStringPatterns(proto)
}

// realArray reports whether v is an array whose length can be read
// without running script code: an array, not a proxy of one.
func (x *exec) realArray(v goja.Value) (*goja.Object, bool) {
	obj, ok := v.(*goja.Object)
	if !ok || !x.isArray(goja.FunctionCall{Arguments: []goja.Value{obj}}).ToBoolean() {
		return nil, false
	}
	if _, proxy := x.proxies[obj]; proxy {
		return nil, false
	}
	return obj, true
}

// lengthOf is LengthOfArrayLike (one read of length, ToLength).
func lengthOf(obj *goja.Object) float64 {
	v := obj.Get("length")
	if v == nil {
		return 0
	}
	l := toInteger(v.ToFloat())
	return math.Max(0, math.Min(l, 1<<53-1))
}

// snapshot reads an array-like's length once and its elements once each,
// after checking that an array of that length fits, and returns them as a
// plain object with a data length (a real array when asArray): the
// built-in then works on values it cannot be shown twice.
func (x *exec) snapshot(obj *goja.Object, what string, asArray bool) *goja.Object {
	n := lengthOf(obj)
	if n*elementBytes > x.maxBytes() {
		x.tooBig(what+" on an object of length "+fmt.Sprintf("%.0f", n), n*elementBytes)
	}
	x.checkScan(what, n)
	vals := make([]any, int(n))
	for i := range vals {
		if v := obj.Get(itoa(i)); v != nil {
			vals[i] = v
		} else {
			vals[i] = goja.Undefined() // nil would become null
		}
	}
	if asArray {
		return x.vm.NewArray(vals...)
	}
	o := x.vm.NewObject()
	for i, v := range vals {
		_ = o.Set(itoa(i), v)
	}
	_ = o.Set("length", len(vals))
	return o
}

// arrayThis returns the receiver of an Array.prototype method with its
// length: a real array as it is, anything else (but null and undefined)
// as a checked snapshot. ok is false for null and undefined, which the
// built-in rejects.
func (x *exec) arrayThis(call goja.FunctionCall, what string) (this goja.Value, length float64, ok bool) {
	if call.This == nil || goja.IsUndefined(call.This) || goja.IsNull(call.This) {
		return call.This, 0, false
	}
	if arr, ok := x.realArray(call.This); ok {
		n := lengthOf(arr)
		x.checkScan(what, n)
		return arr, n, true
	}
	snap := x.snapshot(call.This.ToObject(x.vm), what, true)
	return snap, lengthOf(snap), true
}

func (x *exec) guardArrays() {
	vm := x.vm
	proto := x.proto("Array")
	x.method(proto, "join", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		if call.This == nil || goja.IsUndefined(call.This) || goja.IsNull(call.This) {
			return orig(call)
		}
		// The separator first: converting it may run script code that
		// changes the length the built-in then reads.
		sep := call.Argument(0)
		sepLen := 1
		if !goja.IsUndefined(sep) {
			sep = sep.ToString()
			sepLen = stringLength(sep)
		}
		this, n, _ := x.arrayThis(call, "Array.prototype.join")
		if b := n*elementBytes + n*float64(sepLen)*2; b > x.maxBytes() {
			x.tooBig("Array.prototype.join", b)
		}
		return orig(goja.FunctionCall{This: this, Arguments: []goja.Value{sep}})
	})
	x.method(proto, "toLocaleString", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		this, n, ok := x.arrayThis(call, "Array.prototype.toLocaleString")
		if !ok {
			return orig(call)
		}
		if b := n * (elementBytes + 2); b > x.maxBytes() {
			x.tooBig("Array.prototype.toLocaleString", b)
		}
		call.This = this
		return orig(call)
	})
	// A new array of the receiver's length.
	for _, name := range []string{"toReversed", "toSorted", "toSpliced", "with"} {
		what := "Array.prototype." + name
		x.method(proto, name, func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
			this, n, ok := x.arrayThis(call, what)
			if !ok {
				return orig(call)
			}
			items := 0.0
			if name == "toSpliced" && len(call.Arguments) > 2 {
				items = float64(len(call.Arguments) - 2)
			}
			if b := (n + items) * elementBytes; b > x.maxBytes() {
				x.tooBig(what, b)
			}
			call.This = this
			return orig(call)
		})
	}
	x.method(proto, "fill", x.fill)
	// The methods that walk their receiver are guarded with groupValues
	// (scans.go, lazy.go); sort among them: a comparator that changes the
	// array makes goja's sort fail in Go, and the stand-in's
	// rethrowBuiltin turns that into a TypeError.
	if array, ok := vm.Get("Array").(*goja.Object); ok {
		x.method(array, "from", x.arrayFrom)
	}
	x.method(x.proto("Function"), "apply", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		if len(call.Arguments) > 1 {
			call.Arguments = []goja.Value{call.Arguments[0], x.argList(call.Arguments[1], "Function.prototype.apply")}
		}
		return orig(call)
	})
}

// argList checks an argument list (an array-like) before a built-in turns
// it into arguments: a real array as it is, anything else as a snapshot.
func (x *exec) argList(v goja.Value, what string) goja.Value {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return v
	}
	obj, ok := v.(*goja.Object)
	if !ok {
		return v // the built-in throws its TypeError
	}
	if arr, ok := x.realArray(obj); ok {
		if b := lengthOf(arr) * elementBytes; b > x.maxBytes() {
			x.tooBig(what+" with that many arguments", b)
		}
		return arr
	}
	return x.snapshot(obj, what, true)
}

// fill: on a real array, the span it fills is checked and the built-in
// runs; on anything else the guard fills itself, with the length read
// once.
func (x *exec) fill(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
	if call.This == nil || goja.IsUndefined(call.This) || goja.IsNull(call.This) {
		return orig(call)
	}
	obj := call.This.ToObject(x.vm)
	arr, real := x.realArray(obj)
	n := lengthOf(obj)
	relative := func(i int, def float64) float64 {
		v := call.Argument(i)
		if goja.IsUndefined(v) {
			return def
		}
		r := toInteger(v.ToFloat())
		if r < 0 {
			return math.Max(n+r, 0)
		}
		return math.Min(r, n)
	}
	start, end := relative(1, 0), relative(2, n)
	if span := end - start; span*elementBytes > x.maxBytes() {
		x.tooBig("Array.prototype.fill", span*elementBytes)
	}
	x.checkScan("Array.prototype.fill", end-start)
	value := call.Argument(0)
	if real {
		return orig(goja.FunctionCall{This: arr, Arguments: []goja.Value{value, x.vm.ToValue(start), x.vm.ToValue(end)}})
	}
	for k := start; k < end; k++ {
		if err := obj.Set(ftoa(k), value); err != nil {
			rethrow(err)
		}
	}
	return obj
}

// arrayFrom: a real array's length is checked; an array-like becomes a
// checked snapshot; an iterable's iterator is taken once and handed over.
func (x *exec) arrayFrom(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
	items := call.Argument(0)
	obj, ok := items.(*goja.Object)
	if !ok {
		return orig(call)
	}
	args := append([]goja.Value(nil), call.Arguments...)
	if arr, ok := x.realArray(obj); ok {
		if b := lengthOf(arr) * elementBytes; b > x.maxBytes() {
			x.tooBig("Array.from", b)
		}
		return orig(call)
	}
	if it := obj.GetSymbol(goja.SymIterator); it != nil && !goja.IsUndefined(it) && !goja.IsNull(it) {
		args[0] = x.oneShotIterable(obj, it)
	} else {
		args[0] = x.snapshot(obj, "Array.from", false)
	}
	return orig(goja.FunctionCall{This: call.This, Arguments: args})
}

// oneShotIterable returns an iterable whose @@iterator gives the iterator
// of obj made by method (read once by the guard, so that the built-in
// cannot be shown another one).
func (x *exec) oneShotIterable(obj *goja.Object, method goja.Value) goja.Value {
	fn, ok := goja.AssertFunction(method)
	if !ok {
		return obj // not callable: the built-in throws
	}
	it, err := fn(obj)
	if err != nil {
		rethrow(err)
	}
	o := x.vm.NewObject()
	_ = o.SetSymbol(goja.SymIterator, x.native("[Symbol.iterator]", 0, func(goja.FunctionCall) goja.Value { return it }))
	return o
}

// itoa names index i.
func itoa(i int) string {
	if i >= 0 && i < smallIndices {
		return indexNames()[i]
	}
	return strconv.Itoa(i)
}

// ftoa names index f, a whole number.
func ftoa(f float64) string {
	if f >= 0 && f < smallIndices && f == math.Trunc(f) {
		return indexNames()[int(f)]
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', 0, 64)
}

// smallIndices is how many indices have their names made once: walking
// an array names every index it visits (JSON.stringify, the guarded
// built-ins), and formatting each took most of the walk.
const smallIndices = 4096

// indexNames are the names of the first smallIndices indices, slices of
// one string, made the first time they are needed.
var indexNames = sync.OnceValue(func() []string {
	var b []byte
	ends := make([]int, smallIndices)
	for i := range smallIndices {
		b = strconv.AppendInt(b, int64(i), 10)
		ends[i] = len(b)
	}
	all, names, start := string(b), make([]string, smallIndices), 0
	for i, end := range ends {
		names[i], start = all[start:end], end
	}
	return names
})
