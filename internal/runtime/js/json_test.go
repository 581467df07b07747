package js_test

import (
	"testing"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// jsonCases are JSON.stringify and JSON.parse calls whose results ptc's
// bounded versions must give exactly as goja's own (each is an expression
// evaluated in a fresh runtime; exceptions compare by name). Where goja
// departs from the specification (out-of-range numbers, unpaired
// surrogates: JSON.parse goes through encoding/json) TestJSONConversions
// holds ptc to the specification instead.
var jsonCases = []string{
	`JSON.stringify({a: 1, b: [1, "x", null, true, false], c: {d: {}}})`,
	`JSON.stringify([undefined, function () {}, Symbol("s")])`,
	`JSON.stringify({u: undefined, f() {}, s: Symbol("s"), n: null})`,
	`JSON.stringify(undefined)`,
	`JSON.stringify(function () {})`,
	`JSON.stringify("a\u2028\"\\\n\t\u0001\ud800x\udc00")`,
	`JSON.stringify("héllo 日本 😀")`,
	`JSON.stringify([NaN, Infinity, -Infinity, -0, 0.1, 1e21, 1e-7, 123456789012345680000])`,
	`JSON.stringify({b: 2, a: 1, 10: "x", 2: "y"})`,
	`JSON.stringify({a: [1, {b: 2}], c: "d"}, null, 2)`,
	`JSON.stringify({a: [1, {b: 2}], c: "d"}, null, "--")`,
	`JSON.stringify({a: [1, {b: 2}], c: "d"}, null, 20)`,
	`JSON.stringify({a: [1, {b: 2}], c: "d"}, null, "0123456789abcdef")`,
	`JSON.stringify({a: [], b: {}}, null, 2)`,
	`JSON.stringify({a: 1, b: [2, 3]}, null, new Number(3))`,
	`JSON.stringify({a: 1, b: [2, 3]}, null, new String("\t"))`,
	`JSON.stringify({a: 1, b: 2, c: {a: 3, d: 4}}, ["a", "c", "a", 1, new String("b")])`,
	`JSON.stringify([{a: 1, b: 2}], ["b"])`,
	`JSON.stringify({a: 1, b: "x", c: [1, 2]}, function (k, v) { return typeof v === "number" ? v * 10 : v })`,
	`JSON.stringify({a: 1, b: 2}, function (k, v) { return k === "a" ? undefined : v })`,
	`JSON.stringify({a: 1}, function (k, v) { return k === "" ? [this[""] === v, k] : v })`,
	`JSON.stringify({d: new Date(0), t: {toJSON(k) { return "key:" + k }}})`,
	`JSON.stringify([{toJSON(k) { return k }}])`,
	`JSON.stringify({n: new Number(3), s: new String("x"), b: new Boolean(false)})`,
	`JSON.stringify(Object.create({inherited: 1}, {own: {value: 2, enumerable: true}, hidden: {value: 3}}))`,
	`JSON.stringify({get g() { return "got" }})`,
	`JSON.stringify(new Proxy({a: 1, b: [2]}, {}))`,
	`JSON.stringify(new Proxy([1, 2], {}))`,
	`(() => { const a = {}; a.self = a; return JSON.stringify(a) })()`,
	`(() => { const a = []; a.push(a); return JSON.stringify(a) })()`,
	`(() => { const s = {}; return JSON.stringify([s, s, {s}]) })()`,
	`JSON.stringify({n: 10n})`,
	`JSON.stringify(10n)`,
	`(() => { BigInt.prototype.toJSON = function () { return this.toString() }; return JSON.stringify({n: 10n}) })()`,
	`JSON.stringify({get x() { throw new TypeError("getter") }})`,
	`JSON.stringify({toJSON() { throw new RangeError("toJSON") }})`,
	`JSON.stringify({a: 1}, function () { throw new SyntaxError("replacer") })`,
	`JSON.stringify("x", null, null)`,
	`JSON.stringify([[[[["deep"]]]]])`,
	`JSON.stringify({"\u0000key\n": 1})`,
	`JSON.parse('{"a": [1, 2, {"b": null}], "c": "d"}', function (k, v) { return typeof v === "number" ? v + 1 : v })`,
	`JSON.stringify(JSON.parse('[1, [2, [3]]]', function (k, v) { return Array.isArray(v) ? v.length : v }))`,
	`JSON.stringify(JSON.parse('{"a": 1, "b": 2}', function (k, v) { return k === "a" ? undefined : v }))`,
	`JSON.stringify(JSON.parse('{"__proto__": 1, "a": {"__proto__": {"x": 1}}}'))`,
	`JSON.parse('{"a":')`,
	`JSON.parse('[1, 2')`,
	`JSON.stringify(JSON.parse(' [-0, 1.5] '))`,
}

func TestJSONMatchesGoja(t *testing.T) {
	e := js.New()
	for _, c := range jsonCases {
		t.Run(c, func(t *testing.T) {
			want := gojaEval(c)
			out, _, _ := run(t, e, `try { const v = `+c+`; return v === undefined ? "<undefined>" : v } catch (e) { return "throws " + e.name }`, runOpts{})
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if string(out.Result) != want {
				t.Fatalf("ptc %s, goja %s", out.Result, want)
			}
		})
	}
}

// gojaEval runs expr in a plain goja runtime, as JSON of the same shape
// the test script returns.
func gojaEval(expr string) string {
	vm := goja.New()
	v, err := vm.RunString(`(() => { try { const v = ` + expr + `; return JSON.stringify(v === undefined ? "<undefined>" : v) } catch (e) { return JSON.stringify("throws " + e.name) } })()`)
	if err != nil {
		return err.Error()
	}
	return v.String()
}

// TestJSONDeep: the bounded JSON built-ins end deep nesting with a
// catchable RangeError, in a child process that must survive.
func TestJSONDeep(t *testing.T) {
	nested := `let o = {}; for (let i = 0; i < 2e4; i++) o = {a: o};`
	caught := func(expr string) string {
		return `try { ` + expr + `; return "no error" } catch (e) { return [e.name, e instanceof RangeError] }`
	}
	runProbes(t, []probeCase{
		{name: "JSON.parse of nested brackets", src: caught(`JSON.parse("[".repeat(5e6) + "]".repeat(5e6))`), want: `["RangeError",true]`},
		{name: "JSON.parse of nested objects", src: caught(`JSON.parse('{"a":'.repeat(1e6) + "1" + "}".repeat(1e6))`), want: `["RangeError",true]`},
		{name: "JSON.parse reviver growing the value", src: caught(`JSON.parse('[1, 2]', function (k, v) { if (k === "0") { let o = {}; for (let i = 0; i < 2e4; i++) o = {a: o}; this[1] = o } return v })`), want: `["RangeError",true]`},
		{name: "JSON.stringify of a nested object", src: nested + caught(`JSON.stringify(o)`), want: `["RangeError",true]`},
		{name: "JSON.stringify of a nested array", src: `let a = []; for (let i = 0; i < 2e4; i++) a = [a];` + caught(`JSON.stringify(a)`), want: `["RangeError",true]`},
		{name: "JSON.stringify with a replacer", src: nested + caught(`JSON.stringify(o, (k, v) => v)`), want: `["RangeError",true]`},
		{name: "JSON.stringify with indentation", src: nested + caught(`JSON.stringify(o, null, 2)`), want: `["RangeError",true]`},
		{name: "JSON.stringify through toJSON", src: `const mk = (n) => n === 0 ? 1 : {toJSON() { return [mk(n - 1)] }}; ` + caught(`JSON.stringify(mk(5e4))`), want: `["RangeError",true]`},
		{name: "JSON.stringify output size", src: caught(`JSON.stringify(new Array(1e6).fill("x".repeat(1000)))`), want: `["RangeError",true]`, lim: limits.Limits{MemoryBytes: 64 << 20}},
		{name: "returned value", src: nested + `return o`, kind: fault.KindScript, msg: "nests more than 10000 levels"},
		{name: "console.log of a nested value", src: nested + `console.log(o); return "logged"`, want: `"logged"`},
		{name: "tool argument", src: nested + `try { await tools.echo(o) } catch (e) { return [e.name, e.code] }`, want: `["ToolArgumentError","invalid_arguments"]`},
		{name: "tool result nested", src: `try { await tools.deepout() } catch (e) { return [e.name, e.code] }`, want: `["ToolError","invalid_output"]`},
		{name: "trusted tool result nested", src: `try { await tools.deepoutTrusted() } catch (e) { return [e.name, e.code, e.message] }`, want: `["ToolError","invalid_output","tool returned JSON nested more than 10000 levels deep"]`},
		{name: "thrown nested value", src: nested + `throw o`, kind: fault.KindScript, msg: "uncaught exception"},
	})
}
