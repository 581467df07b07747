package adversarial

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// bombBound is the bound of a bomb under tight limits: the 6s timeout,
// the worker's kill grace and slack for a heavily loaded machine.
const bombBound = 20 * time.Second

// memoryBomb expects MEMORY_LIMIT, or the catchable RangeError of a size
// guard left uncaught.
var memoryBomb = fails(MemoryLimit, ScriptError).and(rangeErrorIfScriptError)

// rangeErrorIfScriptError: a SCRIPT_ERROR from an allocation must be the
// size guards' RangeError, not some other failure.
func rangeErrorIfScriptError(r *ptcv1.ExecuteResponse) error {
	if e := r.GetError(); e.GetKind() == ScriptError && !strings.Contains(e.GetMessage(), "RangeError") {
		return fmt.Errorf("a SCRIPT_ERROR that is not a RangeError")
	}
	return nil
}

// endless expects a limit of time: CPU or wall clock.
var endless = fails(CPULimit, Timeout)

// neverAllocated expects a script that catches an oversized allocation
// to see the size guards' RangeError, in both modes: the allocation never
// happens.
var neverAllocated = succeeds(`"RangeError"`)

// caught wraps an allocation so the script reports what happened to it.
func caught(expr string) string {
	return `try { ` + expr + `; return "allocated" } catch (e) { return e.name }`
}

func bombCases() []tcase {
	b := func(name, src string, w want, fast bool) tcase {
		return tcase{name: name, family: famBomb, fast: fast, bound: bombBound, req: jsReq(src, tight), want: w}
	}
	cs := []tcase{
		// Strings.
		b("string-doubling", `let s = "x"; for (;;) s += s;`, memoryBomb, true),
		b("string-append-loop", `let s = ""; for (;;) s += "abcdefghijklmnopqrstuvwxyz" + s.length;`, memoryBomb.or(CPULimit, Timeout), false),
		b("string-repeat-huge", `return "x".repeat(2 ** 30).length`, memoryBomb, false),
		b("string-repeat-huge-caught", caught(`"x".repeat(2 ** 30)`), neverAllocated, true),
		b("string-pad-huge-caught", caught(`"x".padStart(2 ** 30, "ab")`), neverAllocated, false),
		b("string-split-huge", `const p = "x".repeat(2 ** 25); return p.split("").length`, memoryBomb, false),
		b("string-replace-grow", `return "a".repeat(1e7).replace(/a/g, "bbbbbbbbbbbbbbbb").length`, memoryBomb, false),
		b("string-from-char-code-apply", `return String.fromCharCode.apply(null, new Array(5e7).fill(65)).length`, memoryBomb, false),
		// Arrays.
		b("array-push-loop", `const a = []; for (;;) a.push({n: a.length});`, memoryBomb, true),
		b("array-fill-huge-caught", caught(`new Array(3e8).fill(1)`), neverAllocated, false),
		b("array-from-length-caught", caught(`Array.from({length: 2 ** 31})`), neverAllocated, false),
		b("array-join-sparse-caught", caught(`new Array(2 ** 31 - 1).join("abc")`), neverAllocated, false),
		b("array-spread-huge", `return Math.max(...new Array(3e7).fill(1))`, memoryBomb, false),
		b("array-sparse-sort", caught(`const a = []; a.length = 2 ** 32 - 1; a[5] = 1; a.sort()`), neverAllocated, false),
		// Typed arrays and buffers.
		b("arraybuffer-huge-caught", caught(`new ArrayBuffer(2 ** 31)`), neverAllocated, true),
		b("typed-array-huge-caught", caught(`new Uint8Array(2 ** 31)`), neverAllocated, false),
		b("float64array-huge-caught", caught(`new Float64Array(2 ** 28)`), neverAllocated, false),
		b("arraybuffer-many", `const k = []; for (;;) k.push(new ArrayBuffer(1 << 20));`, memoryBomb, false),
		b("typed-array-copies", `let t = new Uint8Array(1 << 20); const k = []; for (;;) { t = new Uint8Array(t.length); k.push(t) }`, memoryBomb, false),
		// Maps, sets and object graphs.
		b("map-fill", `const m = new Map(); for (let i = 0; ; i++) m.set(i, "v" + i);`, memoryBomb, false),
		b("set-fill", `const s = new Set(); for (let i = 0; ; i++) s.add("k" + i);`, memoryBomb, false),
		b("object-graph", `const all = []; let prev = null; for (let i = 0; ; i++) { prev = {i, prev, s: "n" + i, kids: [prev, prev]}; all.push(prev) }`, memoryBomb, true),
		b("object-many-keys", `const o = {}; for (let i = 0; ; i++) o["key" + i] = i;`, memoryBomb, false),
		residual(b("bigint-squaring", `let v = 3n; for (;;) v = v * v;`, memoryBomb.or(CPULimit, Timeout), false), "multiplying a huge BigInt is one native call that cannot be interrupted: in-process it runs past its timeout (7–23 s for a 6 s timeout); worker mode kills it at the deadline", inprocess),
		residual(b("bigint-huge-power", `return String(2n ** (2n ** 40n)).length`, memoryBomb.or(CPULimit, Timeout), false), "2n ** (2n ** 40n) runs inside math/big, which cannot be interrupted: in-process it runs past its timeout allocating until ptcd itself runs out of memory; worker mode kills it at the deadline", inprocess),
		// JSON.
		b("json-parse-huge", `return JSON.parse("[" + "1,".repeat(2e7) + "1]").length`, memoryBomb, false),
		b("json-stringify-huge", `return JSON.stringify(new Array(1e7).fill("abcdefghij")).length`, memoryBomb, false),
		b("json-stringify-cyclic", `const o = {}; o.o = o; return JSON.stringify(o)`, fails(ScriptError), false),
		// Regular expressions: cut off, never a wrong answer. The first
		// alternative backtracks exponentially, then the second matches.
		b("regex-backtracking-test", `return /^(a+)+(?=b)b$|^a+c$/.test("a".repeat(34) + "c")`, regexWant("true"), true),
		b("regex-backtracking-exec", `const m = /^(a+)+(?=b)b$|^a+c$/.exec("a".repeat(34) + "c"); return m !== null`, regexWant("true"), false),
		b("regex-backtracking-replace", `return ("a".repeat(34) + "c").replace(/^(a+)+(?=b)b$|^a+c$/, "Z")`, regexWant(`"Z"`), false),
		b("regex-backtracking-search", `return ("a".repeat(34) + "c").search(/^(a+)+(?=b)b$|^a+c$/)`, regexWant("0"), false),
		b("regex-backtracking-split", `return ("a".repeat(34) + "c").split(/^(a+)+(?=b)b$|^a+c$/).length`, regexWant("2", "3"), false),
		b("regex-backtracking-caught", `try { return /^(a+)+(?=b)b$|^a+c$/.test("a".repeat(34) + "c") } catch (e) { return e.name }`,
			succeeds().or(CPULimit, Timeout).and(func(r *ptcv1.ExecuteResponse) error {
				if r.GetResultJson() == "false" {
					return fmt.Errorf("WRONG ANSWER: the regular expression was cut off and reported no match")
				}
				return nil
			}), false),
		b("regex-backreference-bomb", `return /^(\w+\s?)*\1$/.test("an apple a day keeps the doctor away ".repeat(3) + "!")`, regexWant("false"), false),
		// Recursion.
		b("recursion-plain", `function f() { return f() } return f()`, fails(ScriptError).and(rangeErrorIfScriptError), true),
		b("recursion-catch-and-retry", `function f() { try { return f() } catch (e) { return f() } } return f()`, endless.or(ScriptError), false),
		b("recursion-tostring", `const o = {toString() { return "" + o }}; return String(o)`, fails(ScriptError), false),
		b("recursion-getter", `const o = {get x() { return this.x }}; return o.x`, fails(ScriptError), false),
		b("recursion-proxy-get", `const p = new Proxy({}, {get: (t, k) => p[k]}); return p.x`, fails(ScriptError), false),
		// Recursion inside goja with no script frame between the levels:
		// its "is not a method" error converts the value to a string,
		// which looks the same method up again. A worker's Go stack
		// overflows at its bound (or outgrows the memory limit first).
		residual(b("recursion-toprimitive-self", `const o = {}; o[Symbol.toPrimitive] = o; return String(o)`, fails(ScriptError, MemoryLimit), false),
			"an object whose Symbol.toPrimitive is itself makes goja recurse in Go with no script frame between the levels until the Go stack overflows, which ends the process: in-process, ptcd; a worker dies at its stack bound in under a second", inprocess),
		residual(b("recursion-proxy-trap-self", `const h = {}; const p = new Proxy(h, h); h.get = p; return p.x`, fails(ScriptError, MemoryLimit), false),
			"a proxy whose get trap is the proxy itself makes goja recurse in Go with no script frame between the levels until the Go stack overflows, which ends the process: in-process, ptcd; a worker dies at its stack bound in under a second", inprocess),
		b("recursion-tojson", `const o = {toJSON() { return JSON.stringify(o) }}; return JSON.stringify(o)`, fails(ScriptError), false),
		b("recursion-async", `async function f(n) { return await f(n + 1) } return await f(0)`, fails(ScriptError), false),
		b("recursion-sort-in-comparator", `const a = [3, 1, 2]; function c(x, y) { [2, 1].sort(c); return x - y } a.sort(c); return a`, fails(ScriptError), false),
		b("promise-chain-long", `let p = Promise.resolve(0); for (let i = 0; i < 1e6; i++) p = p.then((v) => v + 1); return await p`,
			succeeds("1000000").or(MemoryLimit), false),
		// Getters and Proxy traps on what ptc reads: the result, errors.
		b("result-proxy-ownkeys-throws", `return new Proxy({}, {ownKeys() { throw new Error("no keys") }})`, fails(ScriptError, SchemaViolation), false),
		b("result-getter-throws", `return {get a() { throw new Error("getter") }}`, fails(ScriptError, SchemaViolation), true),
		b("result-getter-spins", `return {get a() { for (;;) {} }}`, endless, false),
		b("result-getter-huge", `return {get a() { return "x".repeat(3 << 20) }}`, fails(OutputLimit), false),
		b("result-cyclic", `const o = {}; o.self = o; return o`, fails(SchemaViolation, ScriptError), false),
		b("result-bigint-and-symbol", `return {n: 1n}`, fails(SchemaViolation, ScriptError), false),
		b("thrown-hostile-getters", `throw {get message() { throw 1 }, get stack() { throw 2 }, get name() { throw 3 }, toString() { throw 4 }}`,
			fails(ScriptError), true),
		b("thrown-error-stack-getter-spins", `const e = new Error("x"); Object.defineProperty(e, "stack", {get() { for (;;) {} }}); throw e`,
			fails(ScriptError, CPULimit, Timeout), false),
		b("thrown-error-message-getter-throws", `const e = new Error("x"); Object.defineProperty(e, "message", {get() { throw new Error("again") }}); throw e`,
			fails(ScriptError), false),
		b("thrown-proxy", `throw new Proxy({}, {get() { throw new Error("trap") }, getPrototypeOf() { throw new Error("trap") }})`, fails(ScriptError), false),
		b("thrown-huge-message", `throw new Error("x".repeat(8 << 20))`, fails(ScriptError).and(shortModelMessage), false),
		b("thrown-primitives", `const k = [undefined, null, 1, Symbol("s")][new Date().getMilliseconds() % 4]; throw k`, fails(ScriptError), false),
		b("rejected-hostile-reason", `await Promise.reject({get message() { throw 1 }, get stack() { throw 2 }})`, fails(ScriptError), false),
		// Hostile sort comparators.
		b("sort-comparator-truncates", `const a = Array.from({length: 2000}, (_, i) => i); a.sort((x, y) => { a.length = 0; return x - y }); return a.length`,
			succeeds().or(ScriptError), true),
		b("sort-comparator-grows", `const a = Array.from({length: 2000}, (_, i) => i); a.sort((x, y) => { a.push(x); return y - x }); return a.length > 0`,
			succeeds("true").or(ScriptError, MemoryLimit), false),
		b("sort-comparator-reshapes", `const a = Array.from({length: 2000}, (_, i) => ({i})); a.sort((x, y) => { delete a[5]; a[100000] = x; Object.defineProperty(a, 7, {get() { throw new Error("g") }, configurable: true}); return 1 }); return 1`,
			succeeds("1").or(ScriptError), false),
		b("sort-comparator-throws", `[3, 2, 1].sort(() => { throw new Error("cmp") })`, fails(ScriptError), false),
		b("sort-comparator-random", `const a = Array.from({length: 5000}, (_, i) => i); a.sort(() => Math.random() - 0.5); return a.length`, succeeds("5000"), false),
		b("sort-comparator-spins", `[3, 2, 1].sort(() => { for (;;) {} })`, endless, false),
		b("sort-typed-array-comparator-detaches", `const t = new Float64Array(1000).map(Math.random); t.sort((x, y) => { return x - y }); return t.length`, succeeds("1000"), false),
		// Microtasks and promises.
		b("microtask-await-loop", `for (;;) await null;`, endless, true),
		b("microtask-self-scheduling", `function f() { Promise.resolve().then(f) } f(); await new Promise(() => {});`, endless, false),
		b("microtask-fanout", `function f() { Promise.resolve().then(f); Promise.resolve().then(f) } f(); await new Promise(() => {});`, endless.or(MemoryLimit), false),
		b("never-settling-await", `await new Promise(() => {}); return 1`, fails(Timeout, ScriptError), true),
		b("never-settling-return", `return new Promise(() => {})`, fails(Timeout, ScriptError), false),
	}
	// The CPU budget alone: a timeout well above it.
	cs = append(cs, tcase{name: "cpu-loop", family: famBomb, bound: bombBound,
		req: jsReq(`for (;;) {}`, timeout(10*time.Second), cpu(500*time.Millisecond)), want: fails(CPULimit)})
	// The wall clock alone: a CPU budget larger than the timeout.
	cs = append(cs, tcase{name: "timeout-loop", family: famBomb, bound: bombBound,
		req: jsReq(`for (;;) {}`, timeout(time.Second), cpu(10*time.Second)), want: fails(Timeout)})
	// Built-ins that cannot be interrupted, under a short timeout.
	cs = append(cs, residual(tcase{name: "sort-huge-default", family: famBomb, bound: bombBound,
		req:  jsReq(`const a = Array.from({length: 4e6}, (_, i) => String(4e6 - i)); a.sort(); return a[0]`, timeout(2*time.Second), memory(1<<30)),
		want: succeeds(`"1"`).or(Timeout, CPULimit)},
		"the default sort of 4 million strings is one native call that cannot be interrupted: in-process it runs to its end, 10–20 s past a 2 s timeout on a loaded machine; worker mode kills it at the deadline", inprocess))
	// A memory bomb must reach its limit before its wall clock ends even
	// on a loaded machine (the timeout is wall time): bombs that expect
	// only a memory outcome get room.
	for i := range cs {
		if slices.Contains(cs[i].want.kinds, MemoryLimit) && !slices.Contains(cs[i].want.kinds, Timeout) {
			timeout(20 * time.Second)(cs[i].req)
			cpu(20 * time.Second)(cs[i].req)
			cs[i].bound = 30 * time.Second
		}
	}
	cs = append(cs, nestingCases()...)
	cs = append(cs, tcase{
		// A worker (or ptcd) that ran a large execution runs the next one:
		// what the first held must not count against the second's limit.
		name: "memory-not-charged-to-next-execution", family: famBomb, bound: 120 * time.Second, want: checkedByDo,
		do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
			heavy := jsReq(`let a = []; for (let i = 0; i < 1e6; i++) a = [a, "n" + i]; throw new Error("done")`, memory(1<<30), timeout(30*time.Second), cpu(30*time.Second))
			for i := 0; i < 6; i++ {
				if res, err := e.c.Execute(ctx, heavy); err != nil || res.GetError().GetKind() != ScriptError {
					e.fail("heavy execution %d: %s", i, describe(res, err))
					return nil, nil
				}
				res, err := e.c.Execute(ctx, jsReq(`return 1 + 1`, memory(64*MiB)))
				if err != nil || res.GetResultJson() != "2" {
					e.fail("MEMORY CHARGED TO THE NEXT EXECUTION: after a script that held ~300 MiB and threw, a trivial one under 64 MiB answered %s", describe(res, err))
					return nil, nil
				}
			}
			return nil, nil
		},
	})
	return cs
}

// residual marks c as showing a documented residual risk of modes.
func residual(c tcase, risk string, modes mode) tcase {
	c.residual, c.residualModes = risk, modes
	return c
}

// defective marks c with a known defect (in modes, when given).
func defective(c tcase, defect string, modes ...mode) tcase {
	c.defect = defect
	for _, m := range modes {
		c.defectModes |= m
	}
	return c
}

// regexWant: the right answer, or a classified end; never another answer.
func regexWant(right ...string) want {
	return succeeds(right...).or(ScriptError, CPULimit, Timeout)
}

// shortModelMessage: a model message stays short whatever the script threw.
func shortModelMessage(r *ptcv1.ExecuteResponse) error {
	if n := len(r.GetModelMessage()); n > 16<<10 {
		return fmt.Errorf("model_message is %d bytes", n)
	}
	return nil
}

// nestingLimits leave room for a million-deep structure (about 200 MiB),
// also on a loaded machine: what fails must be the depth, not the memory
// or the time.
func nestingLimits(r *ptcv1.ExecuteRequest) {
	timeout(30 * time.Second)(r)
	cpu(30 * time.Second)(r)
	memory(1 << 30)(r)
}

// nestingCases reach recursive paths of the engine and of ptc with deep
// nesting: each must end as a classified error, never a crash.
func nestingCases() []tcase {
	n := func(name, src string, w want, fast bool) tcase {
		return tcase{name: name, family: famBomb, fast: fast, bound: 45 * time.Second, req: jsReq(src, nestingLimits), want: w}
	}
	deepArray := `let a = []; for (let i = 0; i < 1e6; i++) a = [a];`
	deepSource := strings.Repeat("[", 400000) + strings.Repeat("]", 400000)
	cs := []tcase{
		n("nesting-json-parse-array", `return JSON.parse("[".repeat(3e6) + "]".repeat(3e6)).length`, fails(ScriptError), true),
		n("nesting-json-parse-object", `return Object.keys(JSON.parse('{"a":'.repeat(2e6) + "1" + "}".repeat(2e6))).length`, fails(ScriptError), false),
		n("nesting-json-stringify", deepArray+` return JSON.stringify(a).length`, fails(ScriptError), false),
		n("nesting-eval-literal", `return eval("[".repeat(1e6) + "]".repeat(1e6)).length`, fails(ScriptError), false),
		n("nesting-function-literal", `return new Function("return " + "(".repeat(1e6) + "1" + ")".repeat(1e6))()`, fails(ScriptError), false),
		n("nesting-array-tostring", deepArray+` return String(a).length`, fails(ScriptError), false),
		n("nesting-array-flat", deepArray+` return a.flat(Infinity).length`, succeeds("0").or(ScriptError), false),
		n("nesting-result", deepArray+` return a`, fails(ScriptError, SchemaViolation), false),
		// A built-in installed where a built-in (itself) looks up a method
		// or a getter recursed in Go until ptcd (in-process) died.
		n("native-self-recursion-tolocalestring", `const o = {}; o.toString = Object.prototype.toLocaleString; return String(o)`, fails(ScriptError), true),
		n("native-self-recursion-string-method", `const o = {}; o.toString = String.prototype.trim; return String(o)`, fails(ScriptError), false),
		n("native-self-recursion-length-getter", `const o = {}; Object.defineProperty(o, "length", {get: Array.prototype.push}); return Array.prototype.push.call(o)`, fails(ScriptError), false),
		n("native-self-recursion-tojson", `const o = {toJSON: Date.prototype.toJSON, toString: Date.prototype.toJSON}; return o`, fails(ScriptError), false),
		n("nesting-prototype-chain", `let o = {}; for (let i = 0; i < 1e6; i++) o = Object.create(o); return o.missing === undefined`, succeeds("true").or(ScriptError), false),
		n("nesting-bound-functions", `let f = () => 1; for (let i = 0; i < 1e6; i++) f = f.bind(null); return f()`, succeeds("1").or(ScriptError), false),
		n("nesting-proxy-chain", `let p = {x: 1}; for (let i = 0; i < 1e6; i++) p = new Proxy(p, {}); return p.x`, succeeds("1").or(ScriptError), false),
		n("nesting-console-log", deepArray+` console.log(a); return 1`, succeeds("1").or(ScriptError), false),
	}
	cs = append(cs, tcase{name: "nesting-source-literal", family: famBomb, bound: 45 * time.Second,
		req: jsReq("return "+deepSource, nestingLimits), want: fails(SyntaxError, ScriptError)})
	cs = append(cs, tcase{name: "nesting-typescript-source", family: famBomb, bound: 45 * time.Second,
		req: tsReq("return "+deepSource, nestingLimits), want: fails(SyntaxError, ScriptError)})
	return cs
}
