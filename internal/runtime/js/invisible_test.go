package js_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// builtinSurface walks every object reachable from globalThis (but ptc's
// own globals) through own properties and prototypes, with each
// property's attributes and, for functions, their string form, name,
// length, own keys in order and whether they have a prototype.
const builtinSurface = `
const lines = [], seen = new Map();
const keyName = (k) => typeof k === "symbol" ? "@@" + String(k.description) : String(k);
const fnInfo = (f) => { let s; try { s = Function.prototype.toString.call(f); } catch (e) { s = "throws " + e.name; }
  return s + "/" + f.length + "/" + String(f.name) + "/" + Reflect.ownKeys(f).map(keyName).join(",") + "/" + ("prototype" in f); };
function walk(v, path, depth) {
  if (v === null || (typeof v !== "object" && typeof v !== "function")) return;
  if (seen.has(v)) { lines.push(path + " = " + seen.get(v)); return; }
  seen.set(v, path);
  if (depth > 8) return;
  for (const k of Reflect.ownKeys(v)) {
    if (path === "globalThis" && (k === "input" || k === "tools" || k === "console")) continue;
    const d = Object.getOwnPropertyDescriptor(v, k), p = path + "." + keyName(k);
    let line = p + " " + (d.writable ? "w" : "-") + (d.enumerable ? "e" : "-") + (d.configurable ? "c" : "-");
    if ("value" in d) {
      line += " " + typeof d.value + (typeof d.value === "function" ? " " + fnInfo(d.value) : "");
      lines.push(line);
      walk(d.value, p, depth + 1);
    } else {
      lines.push(line + " get:" + typeof d.get + " set:" + typeof d.set);
      if (d.get) walk(d.get, p + "<get>", depth + 1);
      if (d.set) walk(d.set, p + "<set>", depth + 1);
    }
  }
  const proto = Object.getPrototypeOf(v);
  lines.push(path + " [[Prototype]] " + (proto === null ? "null" : (seen.get(proto) || "(new)")));
  if (proto !== null) walk(proto, path + ".[[Prototype]]", depth + 1);
}
walk(globalThis, "globalThis", 0);
return lines;
`

// TestGuardsInvisible: with every guard installed (the code names
// globalThis), a script sees the same built-ins as in a plain goja
// runtime — the surface, what guarded built-ins do with odd receivers and
// arguments, their frames in stack traces (names; positions differ by the
// wrapper) and the string form of proxies of them.
func TestGuardsInvisible(t *testing.T) {
	plainRun := func(t *testing.T, src string) string {
		t.Helper()
		v, err := goja.New().RunString("(function () {" + src + "\n})()")
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v.Export())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	e := js.New()
	engineRun := func(t *testing.T, src string) string {
		t.Helper()
		out, _, _ := run(t, e, src, runOpts{limits: limits.Limits{MaxOutputBytes: 64 << 20}})
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		return string(out.Result)
	}

	t.Run("surface", func(t *testing.T) {
		var plain, engine []string
		_ = json.Unmarshal([]byte(plainRun(t, builtinSurface)), &plain)
		_ = json.Unmarshal([]byte(engineRun(t, builtinSurface)), &engine)
		if len(plain) < 1000 {
			t.Fatalf("the walk saw %d properties", len(plain))
		}
		for i := 0; i < len(plain) || i < len(engine); i++ {
			var p, g string
			if i < len(plain) {
				p = plain[i]
			}
			if i < len(engine) {
				g = engine[i]
			}
			if p != g {
				t.Fatalf("line %d differs:\nplain goja %s\nptc        %s", i, p, g)
			}
		}
	})

	// Positions in stack traces differ (the script is wrapped in another
	// function); the named frames must not.
	anonymous := regexp.MustCompile(`\\n\\tat (\\u003ceval\\u003e|script\.js):\d+:\d+\(\d+\)`)
	position := regexp.MustCompile(`(\\u003ceval\\u003e|script\.js):\d+:\d+\(\d+\)`)
	frames := func(s string) string { return position.ReplaceAllString(anonymous.ReplaceAllString(s, ""), "@") }
	cases := []struct{ name, expr string }{
		{"frame of a callback", `Array.from([1], function f() { throw new Error("x") })`},
		{"frame of a conversion", `[1, 2].join({ toString() { throw new Error("y") } })`},
		{"frame of a call", `[].fill.call(null)`},
		{"frame of a built-in error", `"a".repeat(-1)`},
		// ptc's JSON.parse has its own messages (goja's are encoding/json's).
		{"frame of JSON.parse", `(() => { try { JSON.parse("{") } catch (e) { e.message = "m"; throw e } })()`},
		{"frame of a constructor", `new Uint8Array({ [Symbol.iterator]() { throw new Error("it") } })`},
		{"frame of a bound function", `(function f() { throw new Error("b") }).bind(null)()`},
		{"not a constructor", `new Array.prototype.join()`},
		{"constructor called through call", `Uint8Array.prototype.constructor.call(1)`},
		{"proxy of a guarded method", `Function.prototype.toString.call(new Proxy(Array.prototype.join, {}))`},
		{"proxy of a guarded constructor", `Function.prototype.toString.call(new Proxy(ArrayBuffer, {}))`},
		{"proxy of Function", `Function.prototype.toString.call(new Proxy(Function, {}))`},
		{"proxy of a proxy", `Function.prototype.toString.call(new Proxy(new Proxy(RegExp, {}), {}))`},
		{"renamed built-in", `Object.defineProperty(Array.prototype.join, "name", {value: "zz"}); return String(Array.prototype.join)`},
		{"join of an object without length", `Array.prototype.join.call({}, ",")`},
		{"toReversed of an object without length", `Array.prototype.toReversed.call({})`},
		{"typed array of an object without length", `new Uint8Array({}).length`},
		{"Array.from of missing elements", `Array.from({length: 2}).map((x) => x === undefined)`},
		{"with on missing elements", `Array.prototype.with.call({length: 2}, 0, 1).map((x) => x === undefined)`},
		{"apply of missing arguments", `return (function () { return [...arguments].map((x) => x === undefined) }).apply(null, {length: 2})`},
		{"Float64Array of missing elements", `String(new Float64Array({length: 1})[0])`},
		{"instanceof and species", `class X extends Uint8Array {}; const x = new X(3); return [x instanceof Uint8Array, x.map((v) => v) instanceof X, new ArrayBuffer(8) instanceof ArrayBuffer]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.expr
			if !strings.Contains(body, "return") {
				body = "return " + body
			}
			src := `globalThis; try { ` + body + ` } catch (e) { return [e.name, e.message, e.stack] }`
			if p, g := frames(plainRun(t, src)), frames(engineRun(t, src)); p != g {
				t.Fatalf("\nplain goja %s\nptc        %s", p, g)
			}
		})
	}
}
