package worker

import (
	"errors"
	"strings"
	"sync"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/runtime/js"
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
// The guards are invisible to a script: each is a method function (no
// prototype, not a constructor) with the built-in's name and length, and
// Function.prototype.toString answers for a guard (and for itself) as for
// the built-in, so a script sees the same built-ins in a worker as
// in-process (the parity test walks them). They are plain functions, not
// Proxies: touching Proxy, Reflect or Map would make goja build them in
// every execution.
//
// The guards are installed in each runtime before its job, when a worker
// makes the runtime ahead (executor.warm): a function compiled once, on
// line 1 of "script.js", called with a native function that returns the
// memory limit of the job the runtime is then running. The program
// starts on line 2 (line 1 is left empty), so line-1 frames are the
// guards': a guard's RangeError has them removed from its stack, so its
// position and stack point at the program's own call site.
const guardCode = `"use strict";
const D = Object.defineProperty, R = Function.prototype.call.bind(Function.prototype.apply);
const Num = Number, isArray = Array.isArray, trunc = (x) => x - x % 1, mib = (n) => (n / 1048576) | 0;
const split = String.prototype.split, filter = Array.prototype.filter, join = Array.prototype.join;
const fail = (what, n) => {
  const e = new RangeError(what + " would need about " + mib(n) + " MiB, more than the memory limit of " + mib(limit()) + " MiB allows; work on smaller pieces");
  try { D(e, "stack", { value: R(join, R(filter, R(split, "" + e.stack, ["\n"]), [(l) => l.indexOf("script.js:1:") < 0]), ["\n"]), writable: true, configurable: true }); } catch (x) {}
  throw e;
};
const len = (o) => { try { const l = Num(o == null ? 0 : o.length); return l > 0 ? l : 0; } catch (e) { return 0; } };
const natives = [];
const method = (obj, name, size, what) => {
  const orig = obj[name];
  if (typeof orig !== "function") return;
  const f = { [name](x) { const a = arguments, n = size(this, a); if (n > limit()) fail(what, n); return R(orig, this, a); } }[name];
  if (orig.length !== 1) D(f, "length", { value: orig.length, writable: false, enumerable: false, configurable: true });
  natives.push(f, orig);
  D(obj, name, { value: f, writable: true, enumerable: false, configurable: true });
};
const span = (o, a, si, ei) => {
  const l = len(o);
  let s = a.length > si ? trunc(Num(a[si])) || 0 : 0;
  let e = a.length > ei && a[ei] !== undefined ? trunc(Num(a[ei])) || 0 : l;
  s = s < 0 ? Math.max(l + s, 0) : Math.min(s, l);
  e = e < 0 ? Math.max(l + e, 0) : Math.min(e, l);
  return e > s ? e - s : 0;
};
method(Array.prototype, "fill", (o, a) => (isArray(o) ? span(o, a, 1, 2) : 0) * 16, "Array.prototype.fill");
method(Array.prototype, "join", (o, a) => len(o) * (16 + (a.length > 0 && a[0] !== undefined ? String(a[0]).length * 2 : 2)), "Array.prototype.join");
method(Array, "from", (o, a) => (a[0] != null && typeof a[0] === "object" && !isArray(a[0])) ? len(a[0]) * 16 : 0, "Array.from");
const fts = Function.prototype.toString;
const ts = { toString() { let t = this; for (let i = 0; i < natives.length; i += 2) { if (natives[i] === t) { t = natives[i + 1]; break; } } return R(fts, t, []); } }.toString;
natives.push(ts, fts);
D(Function.prototype, "toString", { value: ts, writable: true, enumerable: false, configurable: true });
`

// bodyPrefix opens the program's async function on the line after the
// guards' line.
const bodyPrefix = "(async function(){"

// guardProgram is guardCode as a function of the limit getter, all on
// line 1 of "script.js", compiled once.
var guardProgram = sync.OnceValues(func() (*goja.Program, error) {
	return goja.Compile("script.js", "(function(limit){"+strings.ReplaceAll(guardCode, "\n", " ")+"})", true)
})

// installGuards runs the guards in a fresh runtime; they read the memory
// limit from *limit when called.
func installGuards(vm *goja.Runtime, limit *int64) error {
	prg, err := guardProgram()
	if err != nil {
		return err
	}
	v, err := vm.RunProgram(prg)
	if err != nil {
		return err
	}
	fn, ok := goja.AssertFunction(v)
	if !ok {
		return errors.New("worker: the size guards did not compile to a function")
	}
	get := vm.ToValue(func(goja.FunctionCall) goja.Value { return vm.ToValue(*limit) })
	_, err = fn(goja.Undefined(), get)
	return err
}

// guardLimit is the memory limit the guards hold a job to.
func guardLimit(memBytes int64) int64 {
	if memBytes <= 0 || memBytes > maxGuardBytes {
		return maxGuardBytes
	}
	return memBytes
}

// guardedSource returns the program laid out for a runtime with the
// guards installed: line 1 empty (it is the guards'), the program from
// line 2, and the position mapping back to the program.
func guardedSource(source string) js.Source {
	var b strings.Builder
	b.Grow(len(source) + len(bodyPrefix) + 4)
	b.WriteString("\n")
	b.WriteString(bodyPrefix)
	b.WriteString(source)
	b.WriteString("\n})")
	return js.Source{Code: b.String(), Wrapped: true, MapPosition: mapGuarded}
}

// maxGuardBytes bounds the guards' notion of memory when no limit is set.
const maxGuardBytes = 4 << 30

// mapGuarded maps a position in the guarded source to the program's source.
func mapGuarded(line, col int) (int, int, bool) {
	if line < 2 {
		return 0, 0, false
	}
	if line == 2 {
		col -= len(bodyPrefix)
		if col < 1 {
			col = 1
		}
	}
	return line - 1, col, true
}
