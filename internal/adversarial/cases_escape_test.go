package adversarial

import (
	"context"
	"fmt"
	"strings"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// hostNames are globals and properties that would give a script the host:
// none may exist in the sandbox.
const hostNames = `["process","require","module","exports","Buffer","global","__dirname","__filename",
 "setTimeout","setInterval","setImmediate","queueMicrotask","fetch","XMLHttpRequest","WebSocket",
 "Deno","Bun","os","fs","child_process","importScripts","load","print","quit","readline","read",
 "__go","goja","vm","host","syscall","runtime","WebAssembly","SharedArrayBuffer","Atomics"]`

// standardGlobals are the global names a script sees (goja's GoError
// included).
const standardGlobals = "AggregateError,Array,ArrayBuffer,BigInt,BigInt64Array,BigUint64Array,Boolean,DataView,Date,Error,EvalError," +
	"Float32Array,Float64Array,Function,GoError,Infinity,Int16Array,Int32Array,Int8Array,JSON,Map,Math,NaN,Number,Object,Promise,Proxy," +
	"RangeError,ReferenceError,Reflect,RegExp,Set,String,Symbol,SyntaxError,TypeError,URIError,Uint16Array,Uint32Array,Uint8Array," +
	"Uint8ClampedArray,WeakMap,WeakSet,console,decodeURI,decodeURIComponent,encodeURI,encodeURIComponent,escape,eval,globalThis,input," +
	"isFinite,isNaN,parseFloat,parseInt,tools,undefined,unescape"

// sourceMapForms are the compile paths a script reaches, each with a
// source that names a source map with PATH.
var sourceMapForms = []struct {
	name string
	ts   bool
	src  string
}{
	{"top-level", false, "return 1\n//# sourceMappingURL=PATH"},
	{"typescript", true, "const one: number = 1;\nreturn one\n//# sourceMappingURL=PATH"},
	{"eval", false, `return eval("1\n//# sourceMappingURL=PATH")`},
	{"indirect-eval", false, `return (0, eval)("1\n//# sourceMappingURL=PATH")`},
	{"function", false, `return new Function("return 1\n//# sourceMappingURL=PATH")()`},
	{"async-function", false, `const AF = (async () => {}).constructor; return await AF("return 1\n//# sourceMappingURL=PATH")()`},
	{"generator-function", false, `const GF = (function* () {}).constructor; return GF("yield 1\n//# sourceMappingURL=PATH")().next().value`},
	{"legacy-at", false, `return eval("1\n//@ sourceMappingURL=PATH")`},
	{"file-url", false, `return eval("1\n//# sourceMappingURL=file://PATH")`},
	{"thrown", false, `try { eval("throw new Error('boom')\n//# sourceMappingURL=PATH") } catch (e) { return e.stack.includes("` + leakMarker + `") ? "leaked" : 1 }`},
}

// sourceMapCase runs form with a source map URL naming a probe pipe: the
// script must get its result and no process may open the path.
func sourceMapCase(form int, relative bool, fast bool) tcase {
	f := sourceMapForms[form]
	name := "sourcemap-" + f.name
	if relative {
		name += "-relative"
	}
	c := tcase{
		name: name, family: famEscape, fast: fast, bound: 10 * time.Second,
		want: succeeds("1"),
		do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
			ps, path, err := probePath(e, name, relative)
			if err != nil {
				return nil, err
			}
			src := strings.ReplaceAll(f.src, "PATH", path)
			req := jsReq(src, timeout(5*time.Second))
			if f.ts {
				req = tsReq(src, timeout(5*time.Second))
			}
			res, err := e.c.Execute(ctx, req)
			if opened := ps.stop(); len(opened) > 0 {
				e.fail("HOST ACCESS: the script made the server open %s", strings.Join(opened, ", "))
			}
			return res, err
		},
	}
	return c
}

// devZeroCase names /dev/zero as the source map: reading it never ends.
func devZeroCase(name, src string) tcase {
	return tcase{
		name: name, family: famEscape, bound: 10 * time.Second,
		req:          jsReq(src, timeout(5*time.Second), memory(64*MiB)),
		want:         succeeds("1"),
		serverGrowth: 256 * MiB,
	}
}

func escapeCases() []tcase {
	var cs []tcase
	for i := range sourceMapForms {
		cs = append(cs, sourceMapCase(i, false, i == 0 || i == 2))
	}
	cs = append(cs, sourceMapCase(0, true, false), sourceMapCase(2, true, false), sourceMapCase(4, true, false))
	cs = append(cs,
		devZeroCase("sourcemap-dev-zero-top-level", "return 1\n//# sourceMappingURL=/dev/zero"),
		devZeroCase("sourcemap-dev-zero-eval", `return eval("1\n//# sourceMappingURL=/dev/zero")`),
		devZeroCase("sourcemap-dev-zero-function", `return new Function("return 1\n//# sourceMappingURL=/dev/zero")()`),
		devZeroCase("sourcemap-dev-zero-file-url", `return eval("1\n//# sourceMappingURL=file:///dev/zero")`),
		tcase{
			// Whether a host path exists must not change what a script sees.
			name: "sourcemap-existence-oracle", family: famEscape, bound: 10 * time.Second,
			req: jsReq(`
function probe(p) { try { return String(eval("1\n//# sourceMappingURL=" + p)) } catch (e) { return "threw " + e.name + ": " + e.message } }
return [probe("/etc/passwd"), probe("/nonexistent/x.map"), probe("/etc"), probe("/proc/self/environ")]`, timeout(5*time.Second)),
			want: succeeds(`["1","1","1","1"]`),
		},
		tcase{
			name: "function-constructor-chain", family: famEscape, fast: true, bound: 5 * time.Second,
			req: jsReq(`return [
  (function () {}).constructor("return typeof process + typeof require")(),
  (async () => {}).constructor.name,
  Function("return this")() === globalThis,
  [].constructor.constructor("return typeof Buffer")(),
]`),
			want: succeeds(`["undefinedundefined","AsyncFunction",true,"undefined"]`),
		},
		tcase{
			name: "tool-function-constructor", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`const F = tools.get_team_members.constructor; return [F === Function, F("return typeof process")(), typeof console.log.constructor("return 1")]`),
			want: succeeds(`[true,"undefined","function"]`),
		},
		tcase{
			name: "eval-and-indirect-eval", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`return [eval("typeof require"), (0, eval)("typeof process"), (0, eval)("this") === globalThis, eval("input")]`, input(`7`)),
			want: succeeds(`["undefined","undefined",true,7]`),
		},
		tcase{
			name: "no-host-globals", family: famEscape, fast: true, bound: 5 * time.Second,
			req: jsReq(`const bad = ` + hostNames + `;
const seen = new Set();
for (let o = globalThis; o; o = Object.getPrototypeOf(o)) for (const k of Reflect.ownKeys(o)) seen.add(String(k));
return bad.filter((n) => seen.has(n) || typeof globalThis[n] !== "undefined")`),
			want: succeeds(`[]`),
		},
		tcase{
			// Everything a script can see is the same in every mode: the
			// ECMAScript built-ins goja provides, input, tools, console.
			name: "globals-parity", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`return [Object.getOwnPropertyNames(globalThis).sort().join(","), Object.getOwnPropertyNames(console).sort().join(","), typeof input]`),
			want: succeeds(`["` + standardGlobals + `","debug,error,info,log,warn","object"]`),
		},
		tcase{
			name: "tools-properties-parity", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`return Object.getOwnPropertyNames(tools).sort().join(",")`),
			want: succeeds(`"$describe,$search,get_budget_by_level,get_expenses,get_team_members"`),
		},
		tcase{
			name: "no-host-globals-typescript", family: famEscape, bound: 5 * time.Second,
			req:  tsReq(`const bad: string[] = ` + hostNames + `; return bad.filter((n: string) => typeof (globalThis as any)[n] !== "undefined")`),
			want: succeeds(`[]`),
		},
		tcase{
			name: "require-and-import", family: famEscape, bound: 5 * time.Second,
			req: jsReq(`const out = [];
try { require("fs"); out.push("require worked") } catch (e) { out.push(e.name) }
try { await import("fs"); out.push("import worked") } catch (e) { out.push(e.name) }
return out`),
			want: succeeds(`["ReferenceError","TypeError"]`, `["ReferenceError","SyntaxError"]`, `["ReferenceError","ReferenceError"]`).or(SyntaxError),
		},
		tcase{
			name: "static-import", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`import fs from "fs"; return 1`),
			want: fails(SyntaxError),
		},
		tcase{
			name: "host-stack-and-paths", family: famEscape, fast: true, bound: 5 * time.Second,
			req: jsReq(`const e = new Error("x"); const s = String(e.stack);
return [/\.go\b|github\.com|\/home\/|\/tmp\/|\/work\//.test(s), /goroutine|runtime\./.test(s)]`),
			want: succeeds(`[false,false]`),
		},
		tcase{
			name: "thrown-error-stack-is-the-scripts", family: famEscape, bound: 5 * time.Second,
			req: jsReq("function deep(n) { if (n === 0) throw new TypeError('bottom'); return deep(n - 1) }\ndeep(20)"),
			want: fails(ScriptError).and(func(r *ptcv1.ExecuteResponse) error {
				if r.GetError().GetLine() != 1 {
					return fmt.Errorf("error.line %d, want 1", r.GetError().GetLine())
				}
				return nil
			}),
		},
		tcase{
			// A deterministic execution sees the virtual clock, not the host's.
			name: "deterministic-clock-hides-host-time", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`return [new Date().getUTCFullYear(), Date.now() < 86400000]`, func(r *ptcv1.ExecuteRequest) { r.Deterministic = true; r.Seed = 3 }),
			want: succeeds(`[1970,true]`),
		},
	)
	cs = append(cs, tcase{
		// Running scripts in ptcd's own process is the operator's explicit
		// choice, and ptcd says at start-up that they are not sandboxed.
		name: "inprocess-warns-at-start", family: famEscape, modes: inprocess, bound: 5 * time.Second, want: checkedByDo,
		do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
			e.srv.mu.Lock()
			log := e.srv.startLog
			e.srv.mu.Unlock()
			for _, line := range strings.Split(log, "\n") {
				if strings.Contains(line, `"level":"WARN"`) && strings.Contains(strings.ToLower(line), "process") {
					return nil, nil
				}
			}
			e.fail("no start-up warning about in-process execution in: %s", clip(log, 600))
			return nil, nil
		},
	})
	cs = append(cs, pollutionCases()...)
	return cs
}

// pollutionCases change shared-looking state in one execution and check
// the next execution does not see it.
func pollutionCases() []tcase {
	clean := jsReq(`return [
  typeof ({}).polluted, typeof [].polluted, [1, 2].map((x) => x * 2),
  JSON.stringify({a: 1}), typeof Function.prototype.call, Promise.resolve(1) instanceof Promise,
  "ab".toUpperCase(), typeof globalThis.leftover, Math.max(1, 2), typeof console.log, Object.keys(tools).sort().join(","),
]`)
	cleanWant := succeeds(`["undefined","undefined",[2,4],"{\"a\":1}","function",true,"AB","undefined",2,"function","get_budget_by_level,get_expenses,get_team_members"]`)
	mk := func(name, src string, fast bool) tcase {
		return tcase{
			name: name, family: famEscape, fast: fast, bound: 5 * time.Second,
			req: jsReq(src), want: succeeds("1").or(ScriptError),
			next: clean, nextWant: cleanWant,
		}
	}
	return []tcase{
		mk("pollute-object-prototype", `Object.prototype.polluted = 1; Object.defineProperty(Object.prototype, "leftover", {get() { return "x" }, configurable: true}); return 1`, true),
		mk("pollute-array-prototype", `Array.prototype.polluted = 1; Array.prototype.map = function () { return "hijacked" }; return 1`, false),
		mk("pollute-json", `JSON.stringify = () => "hijacked"; JSON.parse = () => 0; return 1`, false),
		mk("pollute-function-prototype", `Function.prototype.call = function () { return "hijacked" }; Function.prototype.polluted = 1; return 1`, false),
		mk("pollute-promise", `Promise.prototype.then = function () { return "hijacked" }; globalThis.Promise = function () {}; return 1`, false),
		mk("pollute-string-and-math", `String.prototype.toUpperCase = () => "hijacked"; Math.max = () => -1; return 1`, false),
		mk("pollute-globals", `globalThis.leftover = 1; console.log = () => { throw new Error("hijacked") }; delete globalThis.JSON; return 1`, false),
		mk("pollute-frozen-intrinsics", `Object.freeze(Object.prototype); Object.freeze(Array.prototype); Object.seal(globalThis); return 1`, false),
		mk("pollute-tools", `tools.get_team_members = () => "hijacked"; tools.extra = 1; Object.setPrototypeOf(tools, {polluted: 1}); return 1`, true),
		{
			name: "pollute-input", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`input.a = "changed"; input.extra = [1]; Object.prototype.polluted = 1; return 1`, input(`{"a":1}`)),
			want: succeeds("1"),
			next: jsReq(`return [input, typeof input.polluted]`, input(`{"a":1}`)), nextWant: succeeds(`[{"a":1},"undefined"]`),
		},
		{
			name: "pollute-thenable-result", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`Object.prototype.then = function (resolve) { resolve(42) }; return {}`),
			want: succeeds("42").or(ScriptError),
			next: clean, nextWant: cleanWant,
		},
		{
			name: "pollute-tojson-result", family: famEscape, bound: 5 * time.Second,
			req:  jsReq(`Object.prototype.toJSON = function () { return "hijacked" }; return {a: 1}`),
			want: succeeds(`"hijacked"`).or(ScriptError),
			next: clean, nextWant: cleanWant,
		},
		{
			name: "pollute-typescript", family: famEscape, bound: 5 * time.Second,
			req:  tsReq(`(Object.prototype as any).polluted = 1; (globalThis as any).leftover = 1; return 1`),
			want: succeeds("1"),
			next: clean, nextWant: cleanWant,
		},
	}
}
