package js

import (
	"slices"

	"github.com/dop251/goja"
)

// Every built-in function a script can reach counts its calls against
// maxNativeDepth. A built-in that reads a property of its receiver or
// converts it (nearly all of them: toString, join, toJSON, the getters,
// anything that reads `length` or `constructor`) runs whatever the script
// installed there, and that may be a built-in again:
// `o.toString = Object.prototype.toLocaleString; String(o)`,
// `Object.defineProperty(o, "length", {get: Array.prototype.push})`,
// `a.constructor` as a getter that is `Array.prototype.concat`. Such a
// chain recurses in Go with no JavaScript frame that goja's call-stack
// limit would see; counted, it ends in a RangeError at maxNativeDepth.
//
// Each built-in is replaced by a plain native function with its name and
// length (natives.go's wrapMethod), getters and setters as well, so the
// guard is invisible. Left alone, because goja compares them by identity
// for its fast paths, are Array.prototype.values (also
// Array.prototype[Symbol.iterator]), the collections' adders, and the
// RegExp.prototype properties a standard regular expression depends on;
// none of them runs code of the script with the receiver it was given.
// Function.prototype[Symbol.hasInstance] is left to fnProxy (natives.go),
// which recognises it, and the getters of Function.prototype.caller and
// arguments only throw (their function is frozen, which a stand-in would
// not be). Constructors are not replaced: they work on their
// arguments, not on a receiver, and the guarded ones are proxies already.
// Functions that only convert their arguments (parseInt, Math.max…) cannot
// recurse on their own: the conversions call methods of the argument,
// which count.
//
// Built-ins reachable from any value are counted for code that can read
// a property or names one of the global object's inherited properties
// (groupValues), and in an Engine's first execution; those reachable only
// through a global name are counted with that name's guard group
// (lazy.go). An execution instantiates only the built-ins it can reach:
// goja makes each on first use, and counting one makes it and its
// stand-in (about 140 of them cost 2,200 allocations and 180 KiB).

// holderRules says, per holder, which of its built-ins countBuiltins
// leaves alone (keep: mostly because goja compares their values with its
// own to choose a fast path) or counts (only: the others check that their
// receiver is of their kind and only convert their arguments, which calls
// methods of the arguments, not of something they looked up). Symbol keys
// are written with their description.
var holderRules = map[string]struct{ keep, only []string }{
	"Array.prototype":    {keep: []string{"values", "Symbol.iterator"}},
	"Map.prototype":      {keep: []string{"set"}},
	"Set.prototype":      {keep: []string{"add"}},
	"WeakMap.prototype":  {keep: []string{"set"}},
	"WeakSet.prototype":  {keep: []string{"add"}},
	"RegExp.prototype":   {keep: []string{"exec", "global", "multiline", "ignoreCase", "unicode", "sticky"}},
	"Function.prototype": {keep: []string{"Symbol.hasInstance", "caller", "arguments"}},
	"Date.prototype":     {only: []string{"toJSON", "Symbol.toPrimitive"}},
	"Date":               {only: []string{}},
}

// symbolNames names the well-known symbols that are keys of built-ins
// (goja's well-known symbols are shared by all runtimes).
var symbolNames = func() map[*goja.Symbol]string {
	m := map[*goja.Symbol]string{}
	for _, s := range []*goja.Symbol{goja.SymHasInstance, goja.SymIsConcatSpreadable, goja.SymIterator,
		goja.SymMatch, goja.SymMatchAll, goja.SymReplace, goja.SymSearch, goja.SymSpecies, goja.SymSplit,
		goja.SymToPrimitive, goja.SymToStringTag, goja.SymUnscopables} {
		m[s] = s.String()
	}
	return m
}()

// builtinKey is a property of a holder of built-ins that holds built-in
// functions: its key and, for a data property, its attributes.
type builtinKey struct {
	name                               string
	sym                                *goja.Symbol
	accessor                           bool
	writable, configurable, enumerable goja.Flag
}

// countBuiltinsOf counts the built-ins of the global constructor name and
// of its prototype.
func (x *exec) countBuiltinsOf(names ...string) {
	for _, name := range names {
		ctor, ok := x.vm.Get(name).(*goja.Object)
		if !ok {
			continue
		}
		if orig := x.wrappers[ctor]; orig != nil {
			ctor = orig // a guarded constructor: its statics are on the original
		}
		x.countBuiltins(name, ctor)
		if proto, ok := ctor.Get("prototype").(*goja.Object); ok {
			x.countBuiltins(name+".prototype", proto)
		}
	}
}

// countBuiltins replaces the built-in functions held by holder's own
// properties (values, getters and setters; constructors excepted) with
// stand-ins that count their calls, following holderRules[path]. Which
// keys hold built-ins is found once per Engine and path (the first
// execution that counts a holder sees it as goja made it: a holder is
// counted before a script can reach it).
func (x *exec) countBuiltins(path string, holder *goja.Object) {
	if holder == nil {
		return
	}
	for _, k := range x.builtinKeys(path, holder) {
		if k.accessor {
			var key goja.Value = k.sym
			if k.sym == nil {
				key = x.vm.ToValue(k.name)
			}
			x.countAccessor(holder, key, k)
			continue
		}
		if k.sym != nil {
			if fn := x.countedBuiltin(holder.GetSymbol(k.sym)); fn != nil {
				_ = holder.DefineDataPropertySymbol(k.sym, fn, k.writable, k.configurable, k.enumerable)
			}
		} else if fn := x.countedBuiltin(holder.Get(k.name)); fn != nil {
			_ = holder.DefineDataProperty(k.name, fn, k.writable, k.configurable, k.enumerable)
		}
	}
}

// builtinKeys returns the keys of holder that hold built-in functions to
// count, found once per Engine.
func (x *exec) builtinKeys(path string, holder *goja.Object) []builtinKey {
	x.e.builtinsMu.Lock()
	keys, ok := x.e.builtins[path]
	x.e.builtinsMu.Unlock()
	if ok {
		return keys
	}
	keys = x.findBuiltinKeys(path, holder)
	x.e.builtinsMu.Lock()
	if x.e.builtins == nil {
		x.e.builtins = map[string][]builtinKey{}
	}
	x.e.builtins[path] = keys
	x.e.builtinsMu.Unlock()
	return keys
}

// findBuiltinKeys reads holder's property descriptors.
func (x *exec) findBuiltinKeys(path string, holder *goja.Object) []builtinKey {
	x.objectIntrinsics()
	if x.rawOwnDescriptor == nil || x.rawOwnSymbols == nil {
		return nil
	}
	rule, ruled := holderRules[path]
	wanted := func(key string) bool {
		if ruled && rule.only != nil {
			return slices.Contains(rule.only, key)
		}
		return !slices.Contains(rule.keep, key)
	}
	var keys []builtinKey
	add := func(k builtinKey, key goja.Value) {
		desc, ok := x.rawOwnDescriptor(goja.FunctionCall{Arguments: []goja.Value{holder, key}}).(*goja.Object)
		if !ok {
			return
		}
		flag := func(name string) goja.Flag {
			if v := desc.Get(name); v != nil && v.ToBoolean() {
				return goja.FLAG_TRUE
			}
			return goja.FLAG_FALSE
		}
		k.configurable, k.enumerable = flag("configurable"), flag("enumerable")
		if get, set := desc.Get("get"), desc.Get("set"); get != nil || set != nil {
			if !isBuiltinFunc(get) && !isBuiltinFunc(set) {
				return
			}
			k.accessor = true
		} else if isBuiltinFunc(desc.Get("value")) {
			k.writable = flag("writable")
		} else {
			return
		}
		keys = append(keys, k)
	}
	for _, name := range holder.GetOwnPropertyNames() {
		if wanted(name) {
			add(builtinKey{name: name}, x.vm.ToValue(name))
		}
	}
	syms, _ := x.rawOwnSymbols(goja.FunctionCall{Arguments: []goja.Value{holder}}).(*goja.Object)
	var n int64
	if syms != nil {
		n = syms.Get("length").ToInteger()
	}
	for i := int64(0); i < n; i++ {
		if sym, ok := syms.Get(itoa(int(i))).(*goja.Symbol); ok && symbolNames[sym] != "" && wanted(symbolNames[sym]) {
			add(builtinKey{sym: sym}, sym)
		}
	}
	return keys
}

// isBuiltinFunc reports whether v is a native function other than a
// constructor (a stand-in of one included).
func isBuiltinFunc(v goja.Value) bool {
	obj, ok := v.(*goja.Object)
	if !ok || rawFunc(obj) == nil {
		return false
	}
	_, isCtor := goja.AssertConstructor(obj)
	return !isCtor
}

// countAccessor replaces the built-in getter and setter of holder's
// accessor property key with counting stand-ins.
func (x *exec) countAccessor(holder *goja.Object, key goja.Value, k builtinKey) {
	desc, ok := x.rawOwnDescriptor(goja.FunctionCall{Arguments: []goja.Value{holder, key}}).(*goja.Object)
	if !ok {
		return
	}
	changed := false
	counted := func(v goja.Value) goja.Value {
		if v == nil || goja.IsUndefined(v) {
			return nil
		}
		if fn := x.countedBuiltin(v); fn != nil {
			changed = true
			return fn
		}
		return v
	}
	get, set := counted(desc.Get("get")), counted(desc.Get("set"))
	if !changed {
		return
	}
	if k.sym != nil {
		_ = holder.DefineAccessorPropertySymbol(k.sym, get, set, k.configurable, k.enumerable)
	} else {
		_ = holder.DefineAccessorProperty(k.name, get, set, k.configurable, k.enumerable)
	}
}

// countedBuiltin returns v's counting stand-in, or nil if v is not a
// built-in function to count: not a native function, a constructor, or
// one of ptc's stand-ins already.
func (x *exec) countedBuiltin(v goja.Value) *goja.Object {
	obj, ok := v.(*goja.Object)
	if !ok || x.wrappers[obj] != nil {
		return nil
	}
	if fn := x.standIns[obj]; fn != nil {
		return fn
	}
	if _, isCtor := goja.AssertConstructor(obj); isCtor {
		return nil
	}
	fn, _ := x.wrapMethod(obj, passThrough)
	return fn
}

// rawFunc is v's Go function if v is a built-in function, else nil.
func rawFunc(v goja.Value) func(goja.FunctionCall) goja.Value {
	if obj, ok := v.(*goja.Object); ok {
		f, _ := obj.Export().(func(goja.FunctionCall) goja.Value)
		return f
	}
	return nil
}

// countValueBuiltins counts, when the execution starts, the built-ins
// reachable from any value if no execution of the Engine has counted them
// yet: which keys hold them is then read from holders as goja made them,
// before any script ran. Otherwise they are counted with groupValues
// (lazy.go), for code that can reach them.
func (x *exec) countValueBuiltins() {
	x.e.builtinsMu.Lock()
	_, known := x.e.builtins["Object.prototype"]
	x.e.builtinsMu.Unlock()
	if !known {
		x.install(groupValues)
	}
}

// countValues counts the built-ins reachable from any value: those of the
// constructors and prototypes of the primitives, objects, arrays,
// functions, errors and promises, and the array and string iterators.
func (x *exec) countValues() {
	x.countBuiltinsOf("Object", "Function", "Array", "String", "Error", "Promise")
	x.countIterator("%ArrayIteratorPrototype%", x.proto("Array"), "values", x.vm.NewArray(), true)
	x.countIterator("%StringIteratorPrototype%", x.proto("String"), "", x.vm.ToValue(""), false)
}

// countCollections counts the built-ins of Date and the collections,
// reachable only through their global names.
func (x *exec) countCollections() {
	x.countBuiltinsOf("Date", "Map", "Set", "WeakMap", "WeakSet")
	for _, name := range []string{"Map", "Set"} {
		if ctor, ok := x.vm.Get(name).(*goja.Object); ok {
			if c, ok := goja.AssertConstructor(ctor); ok {
				if obj, err := c(nil); err == nil {
					x.countIterator("%"+name+"IteratorPrototype%", x.proto(name), "values", obj, false)
				}
			}
		}
	}
}

// countIterator counts the built-ins of the prototype (named path) of the
// iterators that proto's method (Symbol.iterator if method is empty)
// returns for receiver, and of its prototype (%IteratorPrototype%) if
// parent.
func (x *exec) countIterator(path string, proto *goja.Object, method string, receiver goja.Value, parent bool) {
	if proto == nil {
		return
	}
	var m goja.Value
	if method == "" {
		m = proto.GetSymbol(goja.SymIterator)
	} else {
		m = proto.Get(method)
	}
	if o, ok := m.(*goja.Object); ok && x.wrappers[o] != nil {
		m = x.wrappers[o]
	}
	f := rawFunc(m)
	if f == nil {
		return
	}
	it := catchObject(func() *goja.Object {
		o, _ := f(goja.FunctionCall{This: receiver}).(*goja.Object)
		return o
	})
	if it == nil {
		return
	}
	iterProto := it.Prototype()
	x.countBuiltins(path, iterProto)
	if parent && iterProto != nil {
		x.countBuiltins("%IteratorPrototype%", iterProto.Prototype())
	}
}

// catchObject runs f, returning nil if it throws.
func catchObject(f func() *goja.Object) (obj *goja.Object) {
	defer func() {
		if recover() != nil {
			obj = nil
		}
	}()
	return f()
}

// passThrough is the wrap of a built-in that is only counted.
func passThrough(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
	return orig(call)
}

// countRegExp counts the built-ins of RegExp, its prototype and the
// iterators of matchAll.
func (x *exec) countRegExp() {
	x.countBuiltinsOf("RegExp")
	proto := x.proto("RegExp")
	if proto == nil {
		return
	}
	m, _ := proto.GetSymbol(goja.SymMatchAll).(*goja.Object)
	if orig := x.wrappers[m]; orig != nil {
		m = orig
	}
	f := rawFunc(m)
	ctor, ok := goja.AssertConstructor(x.vm.Get("RegExp"))
	if f == nil || !ok {
		return
	}
	rx, err := ctor(nil, x.vm.ToValue(""))
	if err != nil {
		return
	}
	if it := catchObject(func() *goja.Object {
		o, _ := f(goja.FunctionCall{This: rx, Arguments: []goja.Value{x.vm.ToValue("")}}).(*goja.Object)
		return o
	}); it != nil {
		x.countBuiltins("%RegExpStringIteratorPrototype%", it.Prototype())
	}
}

// countTyped counts the built-ins of the buffers, DataView and the typed
// arrays (their methods are on %TypedArray% and its prototype).
func (x *exec) countTyped() {
	x.countBuiltinsOf("ArrayBuffer", "SharedArrayBuffer", "DataView")
	ctor, ok := x.vm.Get("Uint8Array").(*goja.Object)
	if !ok {
		return
	}
	if orig := x.wrappers[ctor]; orig != nil {
		ctor = orig
	}
	if typed := ctor.Prototype(); typed != nil {
		x.countBuiltins("%TypedArray%", typed)
		if proto, ok := typed.Get("prototype").(*goja.Object); ok {
			x.countBuiltins("%TypedArray%.prototype", proto)
		}
	}
}
