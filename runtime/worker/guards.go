package worker

import (
	"strconv"
	"strings"

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
// The guards run as line 1 of the compiled program (so the compiled
// program, guards included, is cached) and the program starts on line 2.
// A guard's RangeError has its line-1 frames removed from its stack, so
// its position and stack point at the program's own call site.
const guardCode = `"use strict";
const max = MAX, D = Object.defineProperty, R = Function.prototype.call.bind(Function.prototype.apply);
const Num = Number, isArray = Array.isArray, trunc = (x) => x - x % 1, mib = (n) => (n / 1048576) | 0;
const split = String.prototype.split, filter = Array.prototype.filter, join = Array.prototype.join;
const fail = (what, n) => {
  const e = new RangeError(what + " would need about " + mib(n) + " MiB, more than the memory limit of " + mib(max) + " MiB allows; work on smaller pieces");
  try { D(e, "stack", { value: R(join, R(filter, R(split, "" + e.stack, ["\n"]), [(l) => l.indexOf("script.js:1:") < 0]), ["\n"]), writable: true, configurable: true }); } catch (x) {}
  throw e;
};
const len = (o) => { try { const l = Num(o == null ? 0 : o.length); return l > 0 ? l : 0; } catch (e) { return 0; } };
const natives = [];
const method = (obj, name, size, what) => {
  const orig = obj[name];
  if (typeof orig !== "function") return;
  const f = { [name](x) { const a = arguments, n = size(this, a); if (n > max) fail(what, n); return R(orig, this, a); } }[name];
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

// bodyPrefix opens the program's async function on the line after the guards.
const bodyPrefix = "(async function(){"

// guardedSource returns the program wrapped with the size guards for a
// memory limit of memBytes, and the position mapping back to the program.
// The guards take line 1; the program starts on line 2.
func guardedSource(source string, memBytes int64) js.Source {
	if memBytes <= 0 || memBytes > maxGuardBytes {
		memBytes = maxGuardBytes
	}
	code := strings.Replace(guardLine, "MAX", strconv.FormatInt(memBytes, 10), 1)
	var b strings.Builder
	b.Grow(len(code) + len(source) + 64)
	b.WriteString("(function(){")
	b.WriteString(code)
	b.WriteString("})();\n")
	b.WriteString(bodyPrefix)
	b.WriteString(source)
	b.WriteString("\n})")
	return js.Source{Code: b.String(), Wrapped: true, MapPosition: mapGuarded}
}

// guardLine is guardCode on one line.
var guardLine = strings.ReplaceAll(guardCode, "\n", " ")

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
