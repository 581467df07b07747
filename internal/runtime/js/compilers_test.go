package js_test

import (
	"testing"

	"github.com/ptcrun/ptc/internal/runtime/js"
)

// TestCompilersBehave: eval and the Function constructors behind their
// nesting check keep their results and their look (name, length, string
// form, instanceof, subclassing); eval is always an indirect eval.
func TestCompilersBehave(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"eval", `return [eval("1 + 1"), eval(7), eval(), eval.name, eval.length, String(eval)]`, `[2,7,null,"eval",1,"function eval() { [native code] }"]`},
		{"eval is indirect", `const local = 1; try { return eval("local") } catch (e) { return e.name }`, `"ReferenceError"`},
		{"eval declares globals", `eval("var fromEval = 3"); return globalThis.fromEval`, `3`},
		{"eval errors", `try { eval("(") } catch (e) { return [e.name, e instanceof SyntaxError] }`, `["SyntaxError",true]`},
		{"Function", `return [new Function("a", "b", "return a + b")(1, 2), Function("return typeof this")(), Function().name, Function.name, Function.length]`, `[3,"object","anonymous","Function",1]`},
		{"Function identity", `const f = function () {}; return [f.constructor === Function, Function.prototype.constructor === Function, f instanceof Function, (() => 1) instanceof Function, String(Function)]`,
			`[true,true,true,true,"function Function() { [native code] }"]`},
		{"Function converts each argument once", `let n = 0; const p = {toString() { n++; return "x" }}; return [Function(p, "return x * 2")(4), n]`, `[8,1]`},
		{"Function subclass", `class F extends Function { m() { return 1 } }; const f = new F("return 5"); return [f(), f instanceof F, f.m()]`, `[5,true,1]`},
		{"Reflect.construct Function", `return Reflect.construct(Function, ["return 9"])()`, `9`},
		{"GeneratorFunction", `const G = Object.getPrototypeOf(function* () {}).constructor; return [G.name, [...G("yield 1; yield 2")()], G("") instanceof G]`, `["GeneratorFunction",[1,2],true]`},
		{"AsyncFunction", `const A = Object.getPrototypeOf(async function () {}).constructor; return [A.name, await A("return 4")(), String(A)]`, `["AsyncFunction",4,"function AsyncFunction() { [native code] }"]`},
		{"generator made by eval", `const g = eval("(function* () { yield 3 })"); return [g().next().value, String(Object.getPrototypeOf(g).constructor)]`, `[3,"function GeneratorFunction() { [native code] }"]`},
		{"Function made by eval sees globals", `return eval("Function('return typeof JSON')")()`, `"object"`},
		{"bound functions", `function f(a, b) { return [this.x, a, b] } const g = f.bind({x: 1}, 2); class C {} const B = C.bind(null);
return [g(3), g.name, g.length, new B() instanceof C, new B() instanceof B, String(g)]`, `[[1,2,3],"bound f",1,true,true,"function bound f() { [native code] }"]`},
		{"call and apply", `function f(a) { return this.x + a } return [f.call({x: 1}, 2), f.apply({x: 3}, [4]), Math.max.call(null, 1, 5), String(Function.prototype.call)]`, `[3,7,5,"function call() { [native code] }"]`},
	}
	e := js.New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, _ := run(t, e, c.src, runOpts{})
			if out.Err != nil || string(out.Result) != c.want {
				t.Fatalf("result %s, error %v; want %s", out.Result, out.Err, c.want)
			}
		})
	}
}
