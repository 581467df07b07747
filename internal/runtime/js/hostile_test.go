package js_test

import (
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// TestHostileValuesAreScriptErrors: whatever a script throws, returns or
// breaks, the outcome is the limit it hit or a SCRIPT_ERROR — never
// INTERNAL, which is for ptc's own faults.
func TestHostileValuesAreScriptErrors(t *testing.T) {
	cases := []struct {
		name, src string
		kind      fault.Kind
	}{
		{"stack getter throws", `const e = new Error("x"); Object.defineProperty(e, "stack", {get() { throw 1 }}); throw e`, fault.KindScript},
		{"stack getter returns a huge string", `const e = new Error("x"); Object.defineProperty(e, "stack", {get() { return "at script.js:1:1\n".repeat(1e6) }}); throw e`, fault.KindScript},
		{"stack getter returns an object", `const e = new Error("x"); Object.defineProperty(e, "stack", {get() { return {toString() { throw 2 }} }}); throw e`, fault.KindScript},
		{"message getter throws", `const e = new Error("x"); Object.defineProperty(e, "message", {get() { throw 3 }}); throw e`, fault.KindScript},
		{"message getter returns a huge string", `const e = new Error(); Object.defineProperty(e, "message", {get() { return "m".repeat(5e6) }}); throw e`, fault.KindScript},
		{"name getter throws", `class E extends Error { get name() { throw new Error("no name") } } throw new E("x")`, fault.KindScript},
		{"name is an object with a throwing toString", `const e = new TypeError("x"); e.name = {toString() { throw 4 }}; throw e`, fault.KindScript},
		{"name getter never returns", `const e = new Error("x"); Object.defineProperty(e, "name", {get() { for (;;) {} }}); throw e`, fault.KindTimeout},
		{"proxy of an error", `throw new Proxy(new Error("x"), {get() { throw 5 }, getPrototypeOf() { throw 6 }, ownKeys() { throw 7 }})`, fault.KindScript},
		{"proxy with throwing traps", `throw new Proxy({}, {get() { throw 8 }, ownKeys() { throw 9 }, getOwnPropertyDescriptor() { throw 10 }})`, fault.KindScript},
		{"revoked proxy", `const {proxy, revoke} = Proxy.revocable({}, {}); revoke(); throw proxy`, fault.KindScript},
		{"symbol", `throw Symbol("s")`, fault.KindScript},
		{"bigint", `throw 10n`, fault.KindScript},
		{"undefined", `throw undefined`, fault.KindScript},
		{"null prototype object", `throw Object.create(null)`, fault.KindScript},
		{"rejected promise of a hostile value", `await Promise.reject(new Proxy({}, {get() { throw 11 }}))`, fault.KindScript},
		{"returned proxy", `return new Proxy({a: 1}, {ownKeys() { throw 12 }})`, fault.KindScript},
		{"returned revoked proxy", `const {proxy, revoke} = Proxy.revocable({}, {}); revoke(); return proxy`, fault.KindScript},
		{"sort comparator empties the array", `const a = Array.from({length: 100}, (_, i) => i); a.sort((x, y) => { a.length = 0; return x - y }); return a`, fault.KindScript},
		{"sort comparator grows the array", `const a = Array.from({length: 100}, (_, i) => i); a.sort((x, y) => { a.push(1, 2, 3); return x - y }); return a.length`, fault.KindScript},
		{"RegExp of a pattern-like object without source", `return String(new RegExp({[Symbol.match]: true}))`, fault.KindScript},
		{"RegExp called on a pattern-like object without source", `return String(RegExp({[Symbol.match]: true}, "g"))`, fault.KindScript},
		{"typed array of an object without length", `return new Uint8Array({}).length`, fault.KindScript},
		{"toSorted comparator empties the array", `const a = Array.from({length: 100}, (_, i) => i); return a.toSorted((x, y) => { a.length = 0; return x - y }).length`, fault.KindScript},
	}
	e := js.New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Long enough for the slowest case under the race detector;
			// short for the one that must time out.
			lim := limits.Limits{Timeout: time.Minute, CPUTime: time.Minute}
			if c.kind == fault.KindTimeout {
				lim.Timeout = time.Second
			}
			out, _, _ := run(t, e, c.src, runOpts{limits: lim})
			if out.Err == nil {
				if c.kind == fault.KindScript && out.Result != nil {
					return // the engine coped; fine
				}
				t.Fatalf("no error, result %s", out.Result)
			}
			if out.Err.Kind != c.kind {
				t.Fatalf("kind %v (%v), want %v", out.Err.Kind, out.Err, c.kind)
			}
		})
	}
}

// TestSortComparatorCatchable: a comparator that changes the array it
// sorts gets a catchable TypeError, not an engine failure.
func TestSortComparatorCatchable(t *testing.T) {
	out, _, _ := run(t, js.New(), `const a = Array.from({length: 100}, (_, i) => i);
try { a.sort((x, y) => { a.length = 0; return x - y }); return "sorted" } catch (e) { return [e.name, e instanceof TypeError] }`, runOpts{})
	if out.Err != nil || string(out.Result) != `["TypeError",true]` {
		t.Fatalf("result %s, error %v", out.Result, out.Err)
	}
}
