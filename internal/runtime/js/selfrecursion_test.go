package js_test

import (
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
)

// TestNativeSelfRecursion: a built-in installed where another built-in
// (or itself) looks up a method or calls a getter recurses in Go with no
// JavaScript frame in between (goja's call-stack limit does not see it,
// and a Go stack overflow is fatal). Each case must end as the script's
// error, a RangeError, in a child process that survives.
func TestNativeSelfRecursion(t *testing.T) {
	cases := []struct{ name, src string }{
		{"toLocaleString as toString", `const o = {}; o.toString = Object.prototype.toLocaleString; return String(o)`},
		{"toLocaleString as toString, template literal", "const o = {}; o.toString = Object.prototype.toLocaleString; return `${o}`"},
		{"Array toString as join", `const o = {}; o.join = Array.prototype.toString; o.toString = Array.prototype.toString; return String(o)`},
		{"Array toString and toLocaleString", `const o = {}; o.toString = Array.prototype.toString; o.join = Object.prototype.toLocaleString; return String(o)`},
		{"join of an array-like holding itself", `const o = {length: 1}; o[0] = o; o.toString = Array.prototype.join; return Array.prototype.join.call(o)`},
		{"String at as valueOf", `const o = {toString: null}; o.valueOf = String.prototype.at; return o + ""`},
		{"String concat as valueOf", `const o = {toString: null}; o.valueOf = String.prototype.concat; return o + ""`},
		{"String trim as toString", `const o = {}; o.toString = String.prototype.trim; return String(o)`},
		{"every String method as toString", `for (const k of Object.getOwnPropertyNames(String.prototype)) { const f = String.prototype[k]; if (typeof f !== "function" || k === "constructor") continue; const o = {}; o.toString = f; try { String(o) } catch (e) { if (!(e instanceof RangeError) && !(e instanceof TypeError)) throw e } } throw new RangeError("Maximum call stack size exceeded: all caught")`},
		{"every Array method as length getter", `for (const k of Object.getOwnPropertyNames(Array.prototype)) { const f = Array.prototype[k]; if (typeof f !== "function" || k === "constructor") continue; const o = {}; Object.defineProperty(o, "length", {get: f}); try { f.call(o, () => 1) } catch (e) { if (!(e instanceof RangeError) && !(e instanceof TypeError)) throw e } } throw new RangeError("Maximum call stack size exceeded: all caught")`},
		{"Date toJSON as toISOString", `const o = {toISOString: Date.prototype.toJSON}; return o.toISOString()`},
		{"Date toJSON as valueOf", `const o = {}; o.valueOf = Date.prototype.toJSON; return +o`},
		{"Date toJSON as Symbol.toPrimitive", `const o = {}; o[Symbol.toPrimitive] = Date.prototype.toJSON; return +o`},
		{"toJSON chain in JSON.stringify", `const o = {toJSON: Date.prototype.toJSON, toString: Date.prototype.toJSON}; return JSON.stringify(o)`},
		{"toJSON chain in a tool's arguments", `const o = {toJSON: Date.prototype.toJSON, toString: Date.prototype.toJSON}; return await tools.echo({o})`},
		{"toJSON chain in the result", `const o = {toJSON: Date.prototype.toJSON, toString: Date.prototype.toJSON}; return {o}`},
		{"toString chain in console.log", `const o = {}; o.toString = Object.prototype.toLocaleString; console.log(o); return String(o)`},
		{"error whose message getter is Error toString", `const e = new Error("x"); Object.defineProperty(e, "message", {get: Error.prototype.toString}); return String(e)`},
		{"thrown error whose message getter is Error toString", `const e = new Error("x"); Object.defineProperty(e, "message", {get: Error.prototype.toString}); Object.defineProperty(e, "name", {get: Error.prototype.toString}); e.toString(); throw e`},
		{"Error toString with itself as name", `const o = {}; o.toString = Error.prototype.toString; o.name = o; return String(o)`},
		{"Error toString as name getter", `const o = {}; Object.defineProperty(o, "name", {get: Error.prototype.toString}); return Error.prototype.toString.call(o)`},
		{"RegExp flags as global getter", `const f = Object.getOwnPropertyDescriptor(RegExp.prototype, "flags").get; const o = {}; Object.defineProperty(o, "global", {get: f}); return f.call(o)`},
		{"RegExp toString as source getter", `const o = {}; Object.defineProperty(o, "source", {get: RegExp.prototype.toString}); return RegExp.prototype.toString.call(o)`},
		{"RegExp match as exec", `const o = {exec: RegExp.prototype[Symbol.match]}; return o.exec("x")`},
		{"RegExp replace as exec of a regular expression", `const r = /x/; r.exec = RegExp.prototype[Symbol.replace]; return "x".replace(r, "y")`},
		{"Object toString as Symbol.toStringTag getter", `const o = {}; Object.defineProperty(o, Symbol.toStringTag, {get: Object.prototype.toString}); return String(o)`},
		{"push as length getter", `const o = {}; Object.defineProperty(o, "length", {get: Array.prototype.push}); return Array.prototype.push.call(o)`},
		{"concat as Symbol.isConcatSpreadable getter", `const o = {}; Object.defineProperty(o, Symbol.isConcatSpreadable, {get: Array.prototype.concat}); return [].concat(o)`},
		{"concat as constructor getter", `const a = []; Object.defineProperty(a, "constructor", {get: Array.prototype.concat}); return a.concat()`},
		{"slice as constructor getter", `const a = []; Object.defineProperty(a, "constructor", {get: Array.prototype.slice}); return a.slice()`},
		{"then as constructor getter", `const p = Promise.resolve(); Object.defineProperty(p, "constructor", {get: Promise.prototype.then}); return p.then()`},
		{"Promise.all as a constructor's resolve", `const a = []; a.push(a); const P = Promise.bind(); P.resolve = Promise.all; return Promise.all.call(P, a)`},
		{"RegExp split as constructor getter", `const r = /x/; Object.defineProperty(r, "constructor", {get: RegExp.prototype[Symbol.split]}); return r[Symbol.split]("x")`},
		{"ArrayBuffer slice as constructor getter", `const b = new ArrayBuffer(8); Object.defineProperty(b, "constructor", {get: ArrayBuffer.prototype.slice}); return b.slice()`},
		{"typed array slice as constructor getter", `const b = new Uint8Array(2); Object.defineProperty(b, "constructor", {get: Uint8Array.prototype.slice}); return b.slice()`},
		{"sort of an array-like holding itself", `const o = {length: 2}; o[0] = o; o[1] = o; o.toString = Array.prototype.sort; return Array.prototype.sort.call(o)`},
		{"Map forEach calling itself", `const m = new Map(); m.set(m, Map.prototype.forEach); return m.forEach(Map.prototype.forEach, m)`},
		{"Array forEach through a Map key", `const m = new Map(); m.set(m, Map.prototype.forEach); return Array.prototype.forEach.call([m], Map.prototype.forEach.bind(m, Map.prototype.forEach, m))`},
		{"proxy with a Reflect.get trap", `const t = {}; const p = new Proxy(t, {get: Reflect.get}); Object.defineProperty(t, "length", {get: Array.prototype.push}); return Array.prototype.push.call(p)`},
		// Code that reads no property by key reaches built-ins through the
		// global object's inherited names, or compiles code that does.
		{"inherited toLocaleString as toString", `const o = {toString: toLocaleString}; return String(o)`},
		{"inherited valueOf, concat destructured", `const {concat: valueOf} = ""; const o = {toString: null, valueOf}; return o + ""`},
		{"destructured String method as toString", `const {trim: f} = ""; return String({toString: f})`},
		{"toLocaleString as toString in eval", `return eval("const o = {}; o.toString = Object.prototype.toLocaleString; String(o)")`},
		{"toLocaleString as toString in Function", `return Function("const o = {}; o.toString = Object.prototype.toLocaleString; return String(o)")()`},
		{"Reflect.get as a getter", `const o = {}; Object.defineProperty(o, "x", {get: Reflect.get.bind(null, Object.create(o), "x")}); return o.x`},
	}
	var probes []probeCase
	for _, c := range cases {
		probes = append(probes, probeCase{name: c.name, src: c.src, kind: fault.KindScript, msg: "Maximum call stack size exceeded"})
	}
	// goja ends these itself: join skips an array it is already joining.
	// A thrown value is described without calling its methods.
	probes = append(probes,
		probeCase{name: "thrown object with a toString chain", src: `const o = {}; o.toString = Object.prototype.toLocaleString; throw o`,
			kind: fault.KindScript, msg: "uncaught exception"},
		probeCase{name: "array holding itself", src: `const a = []; a.push(a); return String(a)`, want: `""`},
		probeCase{name: "array holding itself, toLocaleString", src: `const a = [1]; a.push(a); return a.toLocaleString()`, want: `"1,"`},
	)
	runProbes(t, probes)
}
