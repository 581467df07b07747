package js_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsnest"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// wrapperEscapes are scripts that close the function they are the body of
// and open another, so that the text still parses: each would run code
// outside the function, or make the program's value something else.
var wrapperEscapes = []struct {
	name, src string
	// line and col locate the '}' that closes the function (0: not
	// checked).
	line, col int
}{
	{"global side effect", `}); globalThis.x = typeof tools; (async function () { return "outside: " + x; `, 1, 1},
	{"plain function", `}); (function () { return 42; `, 1, 1},
	{"code before the brace", `return 1 }); (async function () { return 2`, 1, 10},
	{"on a later line", "const a = 1\n}); (async function () {\nreturn a", 2, 1},
	{"sequence", `}, async function () { return "second" `, 1, 1},
	{"sequence in parentheses", `}), (async function () { return "second" `, 1, 1},
	{"binary", `}) + (async function () { `, 1, 1},
	{"conditional", `}) ? 0 : (async function () { `, 1, 1},
	{"called", `}).call(this); (async function () { `, 1, 1},
	{"called on the next line", "})\n(async function () { ", 1, 1},
	{"member", `}).name, (async function () { `, 1, 1},
	{"tagged template", "})`x`; (async function () { ", 1, 1},
	{"template literal in between", "}); globalThis.t = `})${1}`; (async function () { ", 1, 1},
	{"comment in between", `} /* }) */ ); (async function () { `, 1, 1},
	{"line comment ended by U+2028", "// note\u2028}); (async function () { ", 0, 0},
	{"line comment ended by U+2029", "// note\u2029}); (async function () { ", 0, 0},
	{"line comment ended by CR", "// note\r}); (async function () { ", 0, 0},
	{"script tag text", `"</script>"}); (async function () { return "</script>" `, 1, 12},
	{"class static block", `}); class A { static { globalThis.y = 1 } }; (async function () { `, 1, 1},
	{"declaration", `}); function f() {} (async function () { `, 1, 1},
	{"label and block", `}); l: { } (async function () { `, 1, 1},
	{"arrow", `}); (async () => 1); (async function () { `, 1, 1},
	{"nested wrappers", `})(); (async function () { }); (async function () { `, 1, 1},
}

// TestWrapperEscapeIsSyntaxError: no script text can close the function
// the script is the body of; each attempt is a SYNTAX_ERROR that says so,
// at the brace that closed it.
func TestWrapperEscapeIsSyntaxError(t *testing.T) {
	e := js.New()
	for _, c := range wrapperEscapes {
		t.Run(c.name, func(t *testing.T) {
			out, d, _ := run(t, e, c.src, runOpts{})
			if out.Err == nil {
				t.Fatalf("ran: result %s", out.Result)
			}
			if out.Err.Kind != fault.KindSyntax || !strings.Contains(out.Err.Message, jsnest.ClosesWrapper) {
				t.Fatalf("error %v, want a SYNTAX_ERROR saying %q", out.Err, jsnest.ClosesWrapper)
			}
			if c.line != 0 && (out.Err.Line != c.line || out.Err.Column != c.col) {
				t.Fatalf("at %d:%d, want %d:%d", out.Err.Line, out.Err.Column, c.line, c.col)
			}
			if n := len(d.Trace()); n != 0 {
				t.Fatalf("%d tool calls made", n)
			}
			var fe *fault.Error
			if !errors.As(out.Err, &fe) || fe.Cause == nil {
				t.Fatalf("no cause: %#v", out.Err)
			}
		})
	}
}

// TestWrapperLookalikesRun: braces, parentheses and the wrapper's own text
// inside strings, regular expressions, templates and comments are the
// script's, and it runs.
func TestWrapperLookalikesRun(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"string", `return "}); (async function () {"`, `"}); (async function () {"`},
		{"regexp", `return /\}\); \(async function \(\) \{/.source.length`, `30`},
		{"template", "return `})${\"})\"}` + `${{a: {b: 1}}.a.b}`", `"})})1"`},
		{"block comment", "/* }); (async function () { */ return 1", `1`},
		{"line comment at the end", "return 1 // })", `1`},
		{"ends with U+2028", "return 1\u2028", `1`},
		{"ends in a line comment with U+2028", "return 1 // x\u2028", `1`},
		{"CR line ends", "const a = 1\rreturn a", `1`},
		{"use strict", `"use strict"; return typeof this`, `"undefined"`},
		{"empty", ``, `null`},
		{"nested functions", `const f = async function () { return (function () { return {x: [1, {y: 2}]} })() }; return await f()`, `{"x":[1,{"y":2}]}`},
		{"object literal last", `return {a: function () {}}.a.length`, `0`},
		{"html close in a string", `return "-->"`, `"-->"`},
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

// TestFunctionConstructorsKeepTheirShape: the Function constructors build
// "(function anonymous(params\n) {\nbody\n})" as goja does; parameters or
// a body that close that function early are a SyntaxError, and nothing of
// them runs.
func TestFunctionConstructorsKeepTheirShape(t *testing.T) {
	cases := []struct{ name, call string }{
		{"Function body", `Function("}); globalThis.leak = 1; (function () {")`},
		{"new Function body", `new Function("}); globalThis.leak = 1; (function () {")`},
		{"Function parameters", `Function("a) { }); globalThis.leak = 1; (function (b", "")`},
		{"comment across the parameters", `Function("/*", "*/){")`},
		{"AsyncFunction", `(async function () {}).constructor("}); globalThis.leak = 1; (async function () {")`},
		{"GeneratorFunction", `(function* () {}).constructor("}); globalThis.leak = 1; (function* () {")`},
		{"sequence", `Function("}, function () { globalThis.leak = 1 ")`},
	}
	e := js.New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := `try { ` + c.call + `; return "made" } catch (e) { return [e.name, e instanceof SyntaxError, typeof globalThis.leak] }`
			out, _, _ := run(t, e, src, runOpts{})
			if out.Err != nil || string(out.Result) != `["SyntaxError",true,"undefined"]` {
				t.Fatalf("result %s, error %v", out.Result, out.Err)
			}
		})
	}
	out, _, _ := run(t, e, `return [Function("a", "b", "return a + b")(1, 2), new Function("return '})'")(), Function("a = {}", "return a")().constructor.name]`, runOpts{})
	if out.Err != nil || string(out.Result) != `[3,"})","Object"]` {
		t.Fatalf("legitimate functions: result %s, error %v", out.Result, out.Err)
	}
}
