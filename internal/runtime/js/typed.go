package js

import (
	"reflect"

	"github.com/dop251/goja"
)

// typedArrays are the typed array constructors and their element sizes.
var typedArrays = []struct {
	name  string
	bytes float64
}{
	{"Int8Array", 1}, {"Uint8Array", 1}, {"Uint8ClampedArray", 1}, {"Int16Array", 2}, {"Uint16Array", 2},
	{"Int32Array", 4}, {"Uint32Array", 4}, {"Float32Array", 4}, {"Float64Array", 8},
	{"BigInt64Array", 8}, {"BigUint64Array", 8},
}

// guardTypedArrays puts size guards on ArrayBuffer and the typed array
// constructors, which allocate their whole buffer at once: a buffer
// larger than the memory limit allows throws a catchable RangeError before
// the allocation. The constructors become proxies of the built-ins (the
// globals and each prototype's constructor), so that construction through
// any path, subclasses, from() and the species of map() and slice()
// included, passes the check.
func (x *exec) guardTypedArrays() {
	g := x.vm.GlobalObject()
	if ab, ok := g.Get("ArrayBuffer").(*goja.Object); ok {
		x.guardCtor(ab, "ArrayBuffer", func(args []goja.Value) []goja.Value {
			if len(args) == 0 {
				return args
			}
			n := toInteger(args[0].ToFloat())
			x.checkBytes("new ArrayBuffer", n)
			return append([]goja.Value{x.vm.ToValue(n)}, args[1:]...)
		})
	}
	for _, ta := range typedArrays {
		ctor, ok := g.Get(ta.name).(*goja.Object)
		if !ok {
			continue
		}
		ta := ta
		x.guardCtor(ctor, ta.name, func(args []goja.Value) []goja.Value {
			return x.typedArrayArgs(args, ta.name, ta.bytes)
		})
	}
}

// checkBytes throws if a buffer of n bytes is more than the memory limit
// allows.
func (x *exec) checkBytes(what string, n float64) {
	if n > x.maxBytes() {
		x.tooBig(what, n)
	}
}

// typedArrayArgs checks the arguments of `new <name>(…)`, whose elements
// take bytes each, and returns what the constructor should get: a length
// converted once; a typed array whose length is read from the array
// itself; an array-like as a checked snapshot; an iterable through its
// iterator, taken once.
func (x *exec) typedArrayArgs(args []goja.Value, name string, bytes float64) []goja.Value {
	if len(args) == 0 {
		return args
	}
	what := "new " + name
	obj, ok := args[0].(*goja.Object)
	if !ok {
		if goja.IsUndefined(args[0]) {
			return args
		}
		n := toInteger(args[0].ToFloat())
		x.checkBytes(what, n*bytes)
		return append([]goja.Value{x.vm.ToValue(n)}, args[1:]...)
	}
	switch obj.ClassName() {
	case "ArrayBuffer":
		return args // a view: no allocation
	}
	if n, ok := typedLength(obj); ok {
		x.checkBytes(what, n*bytes)
		return args
	}
	if arr, ok := x.realArray(obj); ok {
		x.checkBytes(what, lengthOf(arr)*bytes)
		return args
	}
	out := append([]goja.Value(nil), args...)
	if it := obj.GetSymbol(goja.SymIterator); it != nil && !goja.IsUndefined(it) && !goja.IsNull(it) {
		out[0] = x.oneShotIterable(obj, it)
	} else {
		snap := x.snapshot(obj, what, false)
		x.checkBytes(what, lengthOf(snap)*bytes)
		out[0] = snap
	}
	return out
}

// typedLength returns the length of a typed array, read from goja's own
// data (its exported slice), not from a length property a script may have
// redefined.
func typedLength(obj *goja.Object) (float64, bool) {
	t := obj.ExportType()
	if t == nil || t.Kind() != reflect.Slice {
		return 0, false
	}
	switch t.Elem().Kind() {
	case reflect.Int8, reflect.Uint8, reflect.Int16, reflect.Uint16, reflect.Int32, reflect.Uint32,
		reflect.Float32, reflect.Float64, reflect.Int64, reflect.Uint64:
	default:
		return 0, false
	}
	if obj.ClassName() == "Array" {
		return 0, false
	}
	return float64(reflect.ValueOf(obj.Export()).Len()), true
}

// guardCtor replaces the global constructor name (and its prototype's
// constructor property) with a proxy whose construction first passes the
// arguments through check.
func (x *exec) guardCtor(ctor *goja.Object, name string, check func([]goja.Value) []goja.Value) {
	construct, ok := goja.AssertConstructor(ctor)
	if !ok {
		return
	}
	callable, _ := goja.AssertFunction(ctor)
	var p *goja.Object
	p = x.fnProxy(ctor, &goja.ProxyTrapConfig{
		Apply: func(_ *goja.Object, this goja.Value, args []goja.Value) goja.Value {
			v, err := callable(this, args...) // throws: a constructor needs new
			if err != nil {
				rethrow(err)
			}
			return v
		},
		Construct: func(_ *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			if newTarget == nil || newTarget == p {
				newTarget = ctor
			}
			v, err := construct(newTarget, check(args)...)
			if err != nil {
				rethrow(err)
			}
			return v
		},
	})
	_ = x.vm.GlobalObject().DefineDataProperty(name, p, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	if proto, ok := ctor.Get("prototype").(*goja.Object); ok {
		_ = proto.DefineDataProperty("constructor", p, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
}
