package js

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/dop251/goja"
)

// Scan guards. goja's Array.prototype methods walk the indices of their
// receiver one by one, in native code the VM cannot interrupt, unless it
// is a dense array: on a sparse array or an array-like, every index from 0
// to length is visited, holes included. `new Array(2**32-1).indexOf(1)`
// allocates nothing, yet walks four billion indices (minutes, and a heap
// that grows with every index it looks up); `({length: 2**53-1})` is
// worse. No timeout or memory limit could end them.
//
// So a guarded method first checks the number of indices it would walk,
// the length it will read, against maxScan: over it, the script gets a
// catchable RangeError instead. A real array's length is read without
// running script code, right before the built-in reads it; anything else
// (an array-like, a proxy) has its length read once and gets a view whose
// length stays that value (pinLength), so that a getter cannot show the
// guard one length and the built-in another.

// maxScanIndices bounds the indices one guarded call walks whatever the
// memory limit: at the ~100 ns goja spends per index of a sparse array,
// 16 Mi indices are a second or two of native code.
const maxScanIndices = 1 << 24

// maxScan is the most indices a guarded built-in may walk in one call: as
// many as an array that fits the memory limit has (the guards' elementBytes
// each), at most maxScanIndices.
func (x *exec) maxScan() float64 {
	return math.Min(x.maxBytes()/elementBytes, maxScanIndices)
}

// checkScan throws the RangeError of a call of what that would walk n
// indices.
func (x *exec) checkScan(what string, n float64) {
	if n > x.maxScan() {
		x.throwRange(fmt.Sprintf("%s would visit %.0f indices one by one, more than the %.0f one call may visit under the memory limit (a sparse array's holes count too); work on smaller pieces",
			what, n, x.maxScan()))
	}
}

// scanningMethods are the Array.prototype methods that walk their
// receiver's indices and have no other guard (join, toLocaleString, fill,
// flat and the copying methods check the scan in their own guards).
var scanningMethods = []string{
	"indexOf", "lastIndexOf", "includes",
	"reverse", "sort", "copyWithin", "splice", "slice", "shift", "unshift",
	"forEach", "every", "some", "map", "filter", "reduce", "reduceRight",
	"find", "findIndex", "findLast", "findLastIndex",
}

// guardScans installs the scan guards on the methods of Array.prototype
// that walk their receiver (concat and flatMap what they spread too), and
// the limit checks of the array and string iterators.
func (x *exec) guardScans(proto *goja.Object) {
	for _, name := range scanningMethods {
		what := "Array.prototype." + name
		x.method(proto, name, func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
			this, back, ok := x.scanThis(call.This, what)
			if !ok {
				return orig(call)
			}
			call.This = this
			return back(orig(call))
		})
	}
	x.method(proto, "concat", x.concat)
	x.method(proto, "flatMap", x.flatMap)
	x.guardIterator("Array Iterator", proto.Get("values"), x.vm.NewArray())
	if sp := x.proto("String"); sp != nil {
		x.guardIterator("String Iterator", sp.GetSymbol(goja.SymIterator), x.vm.ToValue(""))
	}
}

// guardIterator makes the iterators that method (a built-in that makes
// array or string iterators) makes for receiver stop at the execution's
// limits: a spread, Array.from, new Set or Promise.all drains an iterator
// in one native loop the VM cannot interrupt, and an array iterator over a
// sparse array of length 2**32-1 yields four billion values without
// holding any. Every 256 steps, next checks the wall clock, the CPU time
// and the context, and throws once they have run out: the drain ends, and
// the VM, back in control, ends the execution with the limit's error. (A
// dense array's spread and for-of do not call next: goja reads the array
// directly.)
func (x *exec) guardIterator(name string, method goja.Value, receiver goja.Value) {
	f := rawFunc(method)
	if f == nil {
		return
	}
	it := catchObject(func() *goja.Object {
		o, _ := f(goja.FunctionCall{This: receiver}).(*goja.Object)
		return o
	})
	if it == nil || it.Prototype() == nil {
		return
	}
	what := name + ".prototype.next"
	x.method(it.Prototype(), "next", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		x.iterSteps++
		if x.iterSteps%256 == 0 {
			if reason := x.outOfTime(); reason != 0 {
				// The watchdog's own interrupt may not have come yet:
				// interrupt now, so that the VM ends the execution as
				// soon as the drain has ended, whatever catches this.
				x.vm.Interrupt(reason)
				x.throwRange(what + ": the execution ran out of time")
			}
		}
		return orig(call)
	})
}

// outOfTime returns why the execution must stop — its wall clock or CPU
// time has run out, or it was cancelled (the VM is interrupted then, but
// native code does not see it) — or 0.
func (x *exec) outOfTime() interruptReason {
	if x.ctx == nil {
		return 0
	}
	if x.expired() {
		return x.endReason()
	}
	if limit := x.job.Limits.CPUTime; limit > 0 && !x.segStart.IsZero() && x.busy+time.Since(x.segStart) >= limit {
		return reasonCPU
	}
	return 0
}

// scanThis returns the receiver of a scanning method, its scan checked:
// a real array or a primitive as it is, anything else as a view with its
// length pinned; back maps a result that is that view to the receiver
// itself. ok is false for null and undefined, which the built-in rejects.
func (x *exec) scanThis(v goja.Value, what string) (this goja.Value, back func(goja.Value) goja.Value, ok bool) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return v, nil, false
	}
	same := func(r goja.Value) goja.Value { return r }
	obj, isObj := v.(*goja.Object)
	if !isObj {
		// A primitive's length (a string's) cannot change.
		x.checkScan(what, lengthOf(v.ToObject(x.vm)))
		return v, same, true
	}
	if arr, real := x.realArray(obj); real {
		x.checkScan(what, lengthOf(arr))
		return arr, same, true
	}
	n := lengthOf(obj)
	x.checkScan(what, n)
	view := x.pinLength(obj, n, nil)
	return view, func(r goja.Value) goja.Value {
		if r == goja.Value(view) {
			return obj
		}
		return r
	}, true
}

// pinLength returns a proxy of obj that reads as obj but for its length,
// which is n, and, when spreadable is set, its Symbol.isConcatSpreadable,
// which is that value.
func (x *exec) pinLength(obj *goja.Object, n float64, spreadable goja.Value) *goja.Object {
	length := x.vm.ToValue(n)
	return x.vm.ToValue(x.vm.NewProxy(obj, &goja.ProxyTrapConfig{
		Get: func(target *goja.Object, property string, _ goja.Value) goja.Value {
			if property == "length" {
				return length
			}
			return nilSafe(target.Get(property))
		},
		GetSym: func(target *goja.Object, sym *goja.Symbol, _ goja.Value) goja.Value {
			if spreadable != nil && sym == goja.SymIsConcatSpreadable {
				return spreadable
			}
			return nilSafe(target.GetSymbol(sym))
		},
	})).(*goja.Object)
}

// concat walks its receiver and every argument it spreads: the total is
// checked. A real array counts as spread (whatever its
// Symbol.isConcatSpreadable says, read by the built-in without running
// script code on it only if it is an own data property: counting it is
// the safe side). Any other object has its Symbol.isConcatSpreadable and
// length read once, and is handed over as a view pinned to them.
func (x *exec) concat(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
	if call.This == nil || goja.IsUndefined(call.This) || goja.IsNull(call.This) {
		return orig(call)
	}
	const what = "Array.prototype.concat"
	items := make([]goja.Value, 0, len(call.Arguments)+1)
	items = append(items, call.This.ToObject(x.vm))
	items = append(items, call.Arguments...)
	total := 0.0
	// kept are the views the built-in puts in the result as elements (the
	// objects it does not spread), by their index there.
	kept := map[int]*goja.Object{}
	for i, it := range items {
		obj, ok := it.(*goja.Object)
		if !ok {
			total++
			continue
		}
		if arr, real := x.realArray(obj); real {
			total += lengthOf(arr)
			continue
		}
		spreadable := obj.GetSymbol(goja.SymIsConcatSpreadable)
		var spread bool
		if spreadable == nil || goja.IsUndefined(spreadable) {
			// Not said: spread if it is an array (a proxy of one).
			spread = x.isArray(goja.FunctionCall{Arguments: []goja.Value{obj}}).ToBoolean()
		} else {
			spread = spreadable.ToBoolean()
		}
		n := 1.0
		if spread {
			n = lengthOf(obj)
		} else {
			kept[int(math.Min(total, math.MaxInt32))] = obj
		}
		total += n
		x.checkScan(what, total)
		items[i] = x.pinLength(obj, n, x.vm.ToValue(spread))
	}
	x.checkScan(what, total)
	res := orig(goja.FunctionCall{This: items[0], Arguments: items[1:]})
	if arr, real := x.realArray(res); real {
		for i, obj := range kept {
			_ = arr.Set(itoa(i), obj)
		}
	}
	return res
}

// flatView returns the view of obj, an array-like of length n, that flat
// and flatMap walk: its length pinned to n and, while depth > 0, each
// element that is an array seen as a flatView itself (of depth-1), its
// length read once and added to *total, which may not pass maxScan. The
// built-in reads every element and every nested length once, through the
// views: the guard counts what it walks as it walks, and nothing can show
// the count one length and the built-in another.
func (x *exec) flatView(obj *goja.Object, n, depth float64, total *float64, what string) *goja.Object {
	length := x.vm.ToValue(n)
	return x.vm.ToValue(x.vm.NewProxy(obj, &goja.ProxyTrapConfig{
		Get: func(target *goja.Object, property string, _ goja.Value) goja.Value {
			if property == "length" {
				return length
			}
			v := nilSafe(target.Get(property))
			if depth <= 0 {
				return v
			}
			if _, err := strconv.ParseUint(property, 10, 32); err != nil {
				return v
			}
			return x.nestedView(v, depth-1, total, what)
		},
		GetSym: func(target *goja.Object, sym *goja.Symbol, _ goja.Value) goja.Value {
			return nilSafe(target.GetSymbol(sym))
		},
	})).(*goja.Object)
}

// nestedView returns v as flat will walk it: an array as a flatView of
// depth, its length counted in *total; anything else as it is.
func (x *exec) nestedView(v goja.Value, depth float64, total *float64, what string) goja.Value {
	o, ok := v.(*goja.Object)
	if !ok || !x.isArray(goja.FunctionCall{Arguments: []goja.Value{o}}).ToBoolean() {
		return v
	}
	m := lengthOf(o)
	*total += m
	x.checkScan(what, *total)
	return x.flatView(o, m, depth, total, what)
}

// flatMap walks its receiver and every array its callback returns: the
// receiver's scan is checked, and the callback's arrays are handed over
// as views whose lengths count towards the same total.
func (x *exec) flatMap(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
	const what = "Array.prototype.flatMap"
	this, back, ok := x.scanThis(call.This, what)
	if !ok {
		return orig(call)
	}
	fn, callable := goja.AssertFunction(call.Argument(0))
	if !callable {
		call.This = this
		return back(orig(call)) // throws the TypeError
	}
	total := 0.0
	if o, ok := this.(*goja.Object); ok {
		total = lengthOf(o)
	}
	mapper := x.native("", 3, func(c goja.FunctionCall) goja.Value {
		v, err := fn(c.This, c.Arguments...)
		if err != nil {
			rethrow(err)
		}
		return x.nestedView(v, 0, &total, what)
	})
	args := append([]goja.Value{mapper}, call.Arguments[1:]...)
	return back(orig(goja.FunctionCall{This: this, Arguments: args}))
}
