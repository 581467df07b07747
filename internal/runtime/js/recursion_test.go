package js_test

import (
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
)

// TestNativeRecursionBounded: built-ins calling built-ins with no
// JavaScript frame in between recurse on the Go stack, which goja's call
// stack limit does not see; each such path ends in a catchable RangeError
// in a child process that must survive.
func TestNativeRecursionBounded(t *testing.T) {
	caught := func(setup, expr string) string {
		return setup + `; try { ` + expr + `; return "no error" } catch (e) { return [e.name, /call stack|nest|bound|proxies/.test(e.message)] }`
	}
	const nested = `let a = []; for (let i = 0; i < 2e4; i++) a = [a]`
	want := `["RangeError",true]`
	runProbes(t, []probeCase{
		{name: "String of a nested array", src: caught(nested, `String(a)`), want: want},
		{name: "join of a nested array", src: caught(nested, `a.join("-")`), want: want},
		{name: "toLocaleString of a nested array", src: caught(nested, `a.toLocaleString()`), want: want},
		{name: "template literal of a nested array", src: caught(nested, "`${a}`"), want: want},
		{name: "flat(Infinity)", src: caught(nested, `a.flat(Infinity)`), want: want},
		{name: "bound String chain", src: caught(`let o = {}; for (let i = 0; i < 2e4; i++) { const p = o; o = {}; o.toString = String.bind(null, p) }`, `String(o)`), want: want},
		{name: "bound getter chain", src: caught(`let o = {x: 1}; for (let i = 0; i < 2e4; i++) { const p = o; o = {}; Object.defineProperty(o, "x", {get: Reflect.get.bind(null, p, "x")}) }`, `o.x`), want: want},
		{name: "native name getter of toString", src: caught(`Object.defineProperty(Math.max, "name", {get: Function.prototype.toString})`, `String(Math.max)`), want: want},
		{name: "call applied to itself", src: caught(`const c = Function.prototype.call`, `c.apply(c, new Array(1e6).fill(c))`), want: want},
		{name: "Reflect.apply nested", src: caught(`let args = [Math.max, null, [1]]; for (let i = 0; i < 2e4; i++) args = [Reflect.apply, null, args]`, `Reflect.apply(...args)`), want: want},
		{name: "bind chain", src: caught(`let f = () => 1`, `for (let i = 0; i < 2e4; i++) f = f.bind(null)`), want: want},
		{name: "proxy target chain", src: caught(`let p = {}`, `for (let i = 0; i < 2e4; i++) p = new Proxy(p, {})`), want: want},
		{name: "proxy handler chain", src: caught(`let h = {}`, `for (let i = 0; i < 2e4; i++) h = new Proxy({}, h)`), want: want},
		{name: "revocable proxy chain", src: caught(`let p = {}`, `for (let i = 0; i < 2e4; i++) p = Proxy.revocable(p, {}).proxy`), want: want},
		// No property read: class fields give each error its name.
		{name: "Error names by class fields", src: "let prev = 'x'; class E extends Error { name = prev }; let e; " +
			"for (let i = 0; i < 2e4; i++) { e = new E(); prev = e } try { return `${e}` } catch (x) { return `${x}` }",
			want: `"RangeError: Maximum call stack size exceeded: toString nested more than 3000 built-in calls deep"`},
		// JavaScript frames in the chain: goja's own call-stack limit.
		{name: "getter chain in JavaScript", src: `let o = {x: 1}; for (let i = 0; i < 2e4; i++) { const p = o; o = {get x() { return p.x }} } return o.x`, kind: fault.KindScript, msg: "call stack"},
		{name: "proxy trap chain in JavaScript", src: `let p = {x: 1}; for (let i = 0; i < 500; i++) { const t = p; p = new Proxy({}, {get: (_, k) => t[k]}) } return p.x`, want: `1`},
		{name: "toString chain in JavaScript", src: `const o = {}; o.toString = () => String(o); return String(o)`, kind: fault.KindScript, msg: "call stack"},
	})
}

// TestNestedBuiltinsWork: moderate nesting through the same built-ins
// still works.
func TestNestedBuiltinsWork(t *testing.T) {
	runProbes(t, []probeCase{
		{name: "nested arrays", src: `let a = [1]; for (let i = 0; i < 500; i++) a = [a, i]; return [String(a).length, a.flat(Infinity).length, JSON.stringify(a).length]`, want: `[1891,501,2893]`},
		{name: "bound functions", src: `let f = (x) => x + 1; for (let i = 0; i < 500; i++) f = f.bind(null); return f(1)`, want: `2`},
		{name: "deeply nested arrays", src: `let a = [1]; for (let i = 0; i < 1400; i++) a = [a, i]; return [String(a).length, a.toLocaleString().length, a.join("-").length]`, want: `[5891,5891,5891]`},
		{name: "proxies", src: `let p = {x: 1}; for (let i = 0; i < 500; i++) p = new Proxy(p, {}); return p.x`, want: `1`},
	})
}
