package js

import (
	"github.com/ptcrun/ptc/internal/jsnest"
)

// Guards on built-ins cost their instantiation: goja creates built-ins on
// first use, and replacing one creates it. Guards on built-ins a script
// reaches only through a global name (JSON, Reflect, Proxy, the typed
// arrays, RegExp, eval) are therefore installed only for code that can
// reach them: code that names one of those globals, names `this` or
// `globalThis` (the global object, through which any global is reachable)
// or spells an identifier with escapes. Every piece of code a script runs
// is scanned before it is compiled (the program, and whatever eval and the
// Function constructors compile), so a guard is in place before the code
// that could reach its built-in runs. The guards of built-ins
// reachable from values (Array.prototype, Function.prototype,
// String.prototype…) — their size guards, counting stand-ins and scan
// guards — are installed for code that may read a property (or names what
// the global object inherits); the size guards also for code that names a
// source of arrays (groupSizes). Code that does neither, such as
// `return {ok: 1}`, does not instantiate those prototypes' methods. The
// recursion guards (recursion.go) and the Function constructors' guards
// (eval.go) are groupBase, installed with any other group: flat and bind
// are reached through a property, the Function constructors through a
// property, the name Function or the global object, and the guard on
// Function.prototype.toString only makes guarded built-ins print as the
// originals. Code that does none of those (groupsOf returns no group
// for it) can still call the globals nobody watches (parseInt, Symbol,
// Promise…) and convert values implicitly, but reaches none of the
// built-ins groupBase guards.

// group is a set of guards installed together.
type group uint16

const (
	groupEval group = 1 << iota
	groupJSON
	groupReflect
	groupProxy
	groupRegExp
	groupTyped
	// groupBacktrack: a pattern runs on regexp2 (regexp.go).
	groupBacktrack
	// groupCollections: Date, Map, Set, WeakMap and WeakSet, whose
	// built-ins count their calls (builtins.go).
	groupCollections
	// groupValues: the built-ins reachable from any value count their
	// calls (builtins.go), and those that walk an array's indices or
	// drain its iterators are scan-guarded (scans.go).
	groupValues
	// groupBigInt: the BigInt built-ins bound what they build
	// (bigint.go); reachable through the name or a BigInt's constructor.
	groupBigInt
	// groupSizes: the size guards of the built-ins reachable from values
	// (String.prototype, Array.prototype, Array.from,
	// Function.prototype.apply; guards.go). Code reaches them by reading
	// a property, through the global object, or implicitly (an array
	// converted to a string calls its join): the arrays code can convert
	// without reading a property (which any `[` or `...` counts as) come
	// from Array, input or a tool, whose names call for the group.
	// groupValues brings it too.
	groupSizes
	// groupTools and groupConsole: the `tools` and `console` globals
	// (setup.go's lazyGlobal), defined only for code that names them or
	// reaches the global object; each costs a getter, a native function,
	// even when the object behind it is never built.
	groupTools
	groupConsole
	// groupBase: Array.prototype.flat, Function.prototype.bind and
	// toString bound (recursion.go), and the Function, AsyncFunction
	// constructors checked (eval.go). Installed with any other group
	// (install), first.
	groupBase
	groupAll = groupEval | groupJSON | groupReflect | groupProxy | groupRegExp | groupTyped | groupCollections | groupValues | groupBigInt | groupSizes |
		groupTools | groupConsole | groupBase
)

// watchedNames are the names a scan looks for, with the groups they call
// for.
var watchedNames = []struct {
	name  string
	group group
}{
	{"this", groupAll}, {"globalThis", groupAll},
	{"eval", groupEval}, {"JSON", groupJSON}, {"Reflect", groupReflect}, {"Proxy", groupProxy}, {"RegExp", groupRegExp},
	{"ArrayBuffer", groupTyped}, {"SharedArrayBuffer", groupTyped}, {"DataView", groupTyped},
	{"Int8Array", groupTyped}, {"Uint8Array", groupTyped}, {"Uint8ClampedArray", groupTyped},
	{"Int16Array", groupTyped}, {"Uint16Array", groupTyped}, {"Int32Array", groupTyped}, {"Uint32Array", groupTyped},
	{"Float32Array", groupTyped}, {"Float64Array", groupTyped},
	{"BigInt64Array", groupTyped | groupBigInt}, {"BigUint64Array", groupTyped | groupBigInt}, {"BigInt", groupBigInt},
	{"Date", groupCollections}, {"Map", groupCollections}, {"Set", groupCollections},
	{"WeakMap", groupCollections}, {"WeakSet", groupCollections}, {"BigInt", groupBigInt},
	// The globals that make or convert arrays and strings, and the
	// values that come from outside.
	{"Array", groupSizes}, {"String", groupSizes}, {"Function", groupSizes}, {"Object", groupSizes},
	{"input", groupSizes}, {"tools", groupSizes | groupTools}, {"console", groupConsole},
	// The Error constructors: a subclass's instances can be given a
	// name by class fields, which read no property, and
	// Error.prototype.toString converts that name, which may be another
	// such error: a recursion of built-ins only groupValues's counting
	// stops.
	{"Error", groupValues}, {"AggregateError", groupValues}, {"EvalError", groupValues}, {"RangeError", groupValues},
	{"ReferenceError", groupValues}, {"SyntaxError", groupValues}, {"TypeError", groupValues}, {"URIError", groupValues},
	// Object.prototype's properties, which the global object inherits:
	// `o = {toString: toLocaleString}` needs no property access.
	{"constructor", groupValues}, {"__defineGetter__", groupValues}, {"__defineSetter__", groupValues},
	{"hasOwnProperty", groupValues}, {"__lookupGetter__", groupValues}, {"__lookupSetter__", groupValues},
	{"isPrototypeOf", groupValues}, {"propertyIsEnumerable", groupValues}, {"toString", groupValues},
	{"valueOf", groupValues}, {"__proto__", groupValues}, {"toLocaleString", groupValues},
}

// watched maps each watched name to its bit in jsnest.Info.Names.
var watched = func() map[string]uint {
	m := make(map[string]uint, len(watchedNames))
	for i, w := range watchedNames {
		m[w.name] = uint(i)
	}
	return m
}()

// groupsOf returns the guard groups code with this scan report needs.
func groupsOf(info jsnest.Info) group {
	if info.Escaped {
		return groupAll
	}
	var g group
	if info.Access {
		g |= groupValues | groupBigInt | groupSizes
	}
	if info.RegExps {
		g |= groupRegExp
	}
	for _, p := range info.Patterns {
		if backtracking(p.Source, p.Flags) {
			g |= groupBacktrack
			break
		}
	}
	for i, w := range watchedNames {
		if info.Names&(1<<uint(i)) != 0 {
			g |= w.group
		}
	}
	if g&groupValues != 0 {
		g |= groupSizes
	}
	return g
}

// scan checks src's nesting and reports the guard groups it needs.
func scan(src string) (group, jsnest.Info, *jsnest.Error) {
	info, err := jsnest.Scan(src, watched)
	return groupsOf(info), info, err
}

// install installs the guard groups of g not installed yet.
func (x *exec) install(g group) {
	if g&groupValues != 0 {
		// The size guards wrap built-ins that groupValues counts: they
		// go first.
		g |= groupSizes
	}
	if g != 0 {
		g |= groupBase
	}
	g &^= x.installed
	if g == 0 {
		return
	}
	x.installed |= g
	if g&groupBase != 0 {
		x.guardBase()
	}
	// The globals first, in the order setup defined them before they
	// became lazy.
	if g&groupTools != 0 {
		x.lazyGlobal(x.vm.GlobalObject(), "tools", x.toolsObject)
	}
	if g&groupConsole != 0 {
		x.lazyGlobal(x.vm.GlobalObject(), "console", x.consoleObject)
	}
	if g&groupSizes != 0 {
		x.guardBuiltins()
	}
	if g&groupEval != 0 {
		x.guardEval()
	}
	if g&groupJSON != 0 {
		x.guardJSON()
	}
	if g&groupReflect != 0 {
		x.guardReflect()
	}
	if g&groupProxy != 0 {
		x.guardProxy()
	}
	if g&groupRegExp != 0 {
		x.guardRegExp()
	}
	if g&groupTyped != 0 {
		x.guardTypedArrays()
	}
	if g&groupBacktrack != 0 {
		x.guardBacktracking()
	}
	// The collections' and typed arrays' constructors drain the
	// iterables they are given: their code needs the iterator guards too.
	if g&(groupValues|groupCollections|groupTyped) != 0 && !x.scansGuarded {
		x.scansGuarded = true
		x.guardScans(x.proto("Array"))
	}
	if g&groupBigInt != 0 {
		x.guardBigInt()
	}
	// After the guards, which replace some of the built-ins counted here.
	if g&groupRegExp != 0 {
		x.countRegExp()
	}
	if g&groupTyped != 0 {
		x.countTyped()
	}
	if g&groupCollections != 0 {
		x.countCollections()
	}
	if g&groupValues != 0 {
		x.countValues()
	}
	x.e.noteStandIns(len(x.wrappers))
}

// maxStandInHint bounds the size a new runtime's maps of stand-ins are
// made with (all guard groups together make about 600).
const maxStandInHint = 1024

// noteStandIns records that a runtime's guards made n stand-ins, so that
// the next runtimes' maps are made that size.
func (e *Engine) noteStandIns(n int) {
	n = min(n, maxStandInHint)
	for {
		cur := e.standIns.Load()
		if int32(n) <= cur || e.standIns.CompareAndSwap(cur, int32(n)) {
			return
		}
	}
}
