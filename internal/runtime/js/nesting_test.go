package js_test

import (
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
)

// TestDeepNestingInSource: text nested deeply enough to overflow the Go
// stack in goja's parser or compiler ends as a classified error on every
// compile path, in a child process that must survive.
func TestDeepNestingInSource(t *testing.T) {
	const deep = `"[".repeat(1e6) + "]".repeat(1e6)`
	catchName := func(compile string) string {
		return `const src = ` + deep + `; try { ` + compile + `; return "compiled" } catch (e) { return [e.name, e instanceof SyntaxError, e.message.includes("nests more than 1000 levels")] }`
	}
	caught := `["SyntaxError",true,true]`
	runProbes(t, []probeCase{
		{name: "program literal", src: "return " + repeat("[", 1e6) + repeat("]", 1e6), kind: fault.KindSyntax, msg: "nests more than 1000 levels"},
		{name: "program expression chain", src: "return 1" + repeat("+1", 5e5), kind: fault.KindSyntax, msg: "nests more than"},
		{name: "program unary chain", src: "return " + repeat("!", 1e6) + "1", kind: fault.KindSyntax, msg: "nests more than"},
		{name: "eval", src: catchName(`eval(src)`), want: caught},
		{name: "indirect eval", src: catchName(`(0, eval)(src)`), want: caught},
		{name: "eval of an operator chain", src: catchName(`eval("1" + "+1".repeat(1e6))`), want: caught},
		{name: "eval of arrows", src: catchName(`eval("a=>".repeat(3e5) + "1")`), want: caught},
		{name: "eval of else-if", src: catchName(`eval("if(a){}else ".repeat(1e5) + "{}")`), want: caught},
		{name: "eval of templates", src: catchName("eval(\"`${\".repeat(2e5) + \"}`\".repeat(2e5))"), want: caught},
		{name: "eval of labels", src: catchName(`eval(Array.from({length: 1e5}, (_, i) => "l" + i + ":").join("") + "1")`), want: caught},
		{name: "Function", src: catchName(`Function("return " + src)`), want: caught},
		{name: "new Function parameters", src: catchName(`new Function("a = " + src, "return a")`), want: caught},
		{name: "Function via a function's constructor", src: catchName(`(function () {}).constructor("return " + src)`), want: caught},
		{name: "Reflect.construct(Function)", src: catchName(`Reflect.construct(Function, ["return " + src])`), want: caught},
		{name: "class extends Function", src: catchName(`class F extends Function {}; new F("return " + src)`), want: caught},
		{name: "GeneratorFunction", src: catchName(`Object.getPrototypeOf(function* () {}).constructor("yield " + src)`), want: caught},
		{name: "AsyncFunction", src: catchName(`Object.getPrototypeOf(async function () {}).constructor("return " + src)`), want: caught},
		{name: "uncaught", src: `eval(` + deep + `)`, kind: fault.KindScript, msg: "SyntaxError: eval: the code nests more than 1000 levels"},
	})
}

func repeat(s string, n float64) string {
	b := make([]byte, 0, len(s)*int(n))
	for i := 0; i < int(n); i++ {
		b = append(b, s...)
	}
	return string(b)
}

// TestAmbiguousSlashRefused: a `/` the scan cannot tell a division from
// a regular expression by is a classified SyntaxError, and text the scan
// once read otherwise than goja's parser is scanned as the parser reads
// it, in a child process that must survive: misread, the code behind went
// unscanned (here, a built-in recursion its guards did not bound, nesting
// deep enough to overflow the parser, a Function constructor unguarded).
func TestAmbiguousSlashRefused(t *testing.T) {
	const msg = "may start a regular expression or divide"
	runProbes(t, []probeCase{
		// of is a name after an operator: its division is scanned.
		{name: "division by of: property reads seen",
			src:  "let of = 2; let z = of / 1; const o = {}; o.toString = o.toLocaleString; z = `${o}`; z = z / of; return z",
			kind: fault.KindScript, msg: "nested more than 3000 built-in calls deep"},
		{name: "division by of: nesting seen",
			src:  "let of = 2; let z = of / 1 + " + repeat("[", 4e5) + repeat("]", 4e5) + "; return 1",
			kind: fault.KindSyntax, msg: "nests more than 1000 levels"},
		{name: "division by yield",
			src:  "var yield = 2; const o = {}; o.toString = o.toLocaleString; let z = yield / 1; z = `${o}`; z = z / yield; return z",
			kind: fault.KindSyntax, msg: msg},
		{name: "let as a name", src: "var let = 1; const o = {x: 2}; return let / 1 + o.x / 1", want: `3`},
		{name: "regexp after an async function declaration hides nesting",
			src:  "async function f(){}\n/`/; var x = " + repeat("[", 4e5) + repeat("]", 4e5) + " //`\nreturn 1",
			kind: fault.KindSyntax, msg: msg},
		{name: "regexp after a function declaration in a catch block hides nesting",
			src:  "try {} catch { function f(){} /'/; var x = " + repeat("[", 4e5) + repeat("]", 4e5) + " //'\n}\nreturn 1",
			kind: fault.KindSyntax, msg: msg},
		{name: "a hashbang line at the start of eval's text",
			src:  "try { return eval('#!`\\n' + '['.repeat(4e5) + '\\n//`') } catch (e) { return [e.name, e.message.includes('nests more than')] }",
			want: `["SyntaxError",true]`},
		{name: "U+0085 before a regular expression",
			src:  "x =\u0085/`/\n+ " + repeat("[", 4e5) + "\n//`\nreturn 1",
			kind: fault.KindSyntax, msg: "nests more than"},
		{name: "property read after a number's dots", src: `var s = "["; for (var i = 0; i < 19; i++) s += s; return 1..constructor.constructor(s)`,
			kind: fault.KindScript, msg: "nests more than 1000 levels"},
		// goja's parser panics on this text (an index out of range in
		// reinterpretAsArrayBindingPattern): a syntax error, not a dead
		// process or an internal error.
		{name: "text goja's parser panics on", src: "function f([...function", kind: fault.KindSyntax, msg: "SyntaxError"},
		{name: "eval of text goja's parser panics on", src: `try { eval("function f([...function") } catch (e) { return [e.name, e.message.includes("the parser failed")] }`, want: `["SyntaxError",true]`},
		{name: "Function of text goja's parser panics on", src: `try { Function("function f([...function") } catch (e) { return [e.name, e.message.includes("the parser failed")] }`, want: `["SyntaxError",true]`},
		{name: "in eval", src: `try { eval("var yield = 2; yield / 1") } catch (e) { return [e.name, e.message.includes("` + msg + `")] }`, want: `["SyntaxError",true]`},
	})
}
