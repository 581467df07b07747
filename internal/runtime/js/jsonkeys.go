package js

import (
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// Property names are UTF-16 in JavaScript and may hold unpaired
// surrogates ({"\ud800": 1}); goja's Go API speaks UTF-8 strings, in which
// an unpaired surrogate becomes U+FFFD: obj.Keys() would give a name that
// obj.Get cannot find, and two names could become one. The JSON
// conversions read names through jsonKey, which keeps the name as a
// JavaScript string whenever its Go form may not be exact, and reach such
// properties through Object.keys and Object.defineProperty (captured
// before any script runs) and two functions of ptc's own that read and
// delete a property with JavaScript's operators (keyProgram: they depend
// on no global a script could replace, so they are made only when first
// needed).

// keyProgram makes keyGet and keyDelete; sloppy mode, so that deleting a
// property that cannot be deleted fails quietly, as [[Delete]] does.
var keyProgram = goja.MustCompile("keys.js", `[function (o, k) { return o[k] }, function (o, k) { delete o[k] }]`, false)

// keyHelpers makes keyGet and keyDelete if they are not made yet.
func (x *exec) keyHelpers() bool {
	if x.keyGet != nil {
		return true
	}
	v, err := x.vm.RunProgram(keyProgram)
	if err != nil {
		rethrow(err)
	}
	arr, ok := v.(*goja.Object)
	if !ok {
		return false
	}
	x.keyGet, _ = goja.AssertFunction(arr.Get("0"))
	x.keyDelete, _ = goja.AssertFunction(arr.Get("1"))
	return x.keyGet != nil && x.keyDelete != nil
}

// jsonKey is one property name: s, or v when s may not be exact (v then
// holds the name as JavaScript has it).
type jsonKey struct {
	s string
	v goja.String
}

// value is the key as a JavaScript string (what a replacer, toJSON or a
// reviver receives).
func (k jsonKey) value(vm *goja.Runtime) goja.Value {
	if k.v != nil {
		return k.v
	}
	return vm.ToValue(k.s)
}

// inexact reports whether s, a name converted from JavaScript, may differ
// from the name itself: it holds U+FFFD, which an unpaired surrogate turns
// into.
func inexact(s string) bool {
	return strings.Contains(s, string(utf8.RuneError))
}

// exactKey is the jsonKey of v, a JavaScript string.
func exactKey(v goja.String) jsonKey {
	s := v.String()
	if inexact(s) {
		return jsonKey{s: s, v: v}
	}
	return jsonKey{s: s}
}

// id tells keys apart in a property list: s, or for a key held as v its
// UTF-16 units after the bytes 00 FF, which no s holds (s is valid UTF-8,
// where FF never occurs).
func (k jsonKey) id() string {
	if k.v == nil {
		return k.s
	}
	n := k.v.Length()
	b := make([]byte, 0, 2+2*n)
	b = append(b, 0, 0xff)
	for i := 0; i < n; i++ {
		c := k.v.CharAt(i)
		b = append(b, byte(c>>8), byte(c))
	}
	return string(b)
}

// ownKeys is obj's own enumerable string keys (EnumerableOwnProperties),
// exact.
func (x *exec) ownKeys(obj *goja.Object) []jsonKey {
	names, keys := x.ownNames(obj)
	if keys != nil {
		return keys
	}
	keys = make([]jsonKey, len(names))
	for i, n := range names {
		keys[i] = jsonKey{s: n}
	}
	return keys
}

// ownNames is obj's own enumerable string keys as names, when every Go
// name is exact (the common case, one obj.Keys() and nothing more), or
// else as keys, read again through Object.keys.
func (x *exec) ownNames(obj *goja.Object) ([]string, []jsonKey) {
	names := obj.Keys()
	slow := false
	for _, n := range names {
		if inexact(n) {
			slow = true
			break
		}
	}
	if slow {
		x.objectIntrinsics()
	}
	if !slow || x.rawObjectKeys == nil {
		return names, nil
	}
	arr, ok := x.rawObjectKeys(goja.FunctionCall{Arguments: []goja.Value{obj}}).(*goja.Object)
	if !ok {
		return names, nil
	}
	n := lengthOf(arr)
	keys := make([]jsonKey, 0, int(n))
	for i := 0.0; i < n; i++ {
		if s, ok := arr.Get(ftoa(i)).(goja.String); ok {
			keys = append(keys, exactKey(s))
		}
	}
	return nil, keys
}

// getKey is obj[k].
func (x *exec) getKey(obj *goja.Object, k jsonKey) goja.Value {
	var v goja.Value
	if k.v != nil && x.keyHelpers() {
		res, err := x.keyGet(goja.Undefined(), obj, k.v)
		if err != nil {
			rethrow(err)
		}
		v = res
	} else {
		v = obj.Get(k.s)
	}
	if v == nil {
		return goja.Undefined()
	}
	return v
}

// defineKey is CreateDataProperty(obj, k, v): a failure (a frozen
// object) is ignored, as it is for a name with an exact Go form.
func (x *exec) defineKey(obj *goja.Object, k jsonKey, v goja.Value) {
	if k.v != nil {
		x.objectIntrinsics()
	}
	if k.v == nil || x.rawDefine == nil {
		_ = obj.DefineDataProperty(k.s, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
		return
	}
	// The descriptor has no prototype: Object.defineProperty would read
	// a get or set that a script put on Object.prototype.
	desc := x.vm.NewObject()
	_ = desc.SetPrototype(nil)
	for _, f := range []string{"writable", "enumerable", "configurable"} {
		_ = desc.DefineDataProperty(f, x.vm.ToValue(true), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	_ = desc.DefineDataProperty("value", v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	_ = x.vm.Try(func() { x.rawDefine(goja.FunctionCall{Arguments: []goja.Value{obj, k.v, desc}}) })
}

// deleteKey is delete obj[k].
func (x *exec) deleteKey(obj *goja.Object, k jsonKey) {
	if k.v == nil || !x.keyHelpers() {
		_ = obj.Delete(k.s)
		return
	}
	if _, err := x.keyDelete(goja.Undefined(), obj, k.v); err != nil {
		rethrow(err)
	}
}
