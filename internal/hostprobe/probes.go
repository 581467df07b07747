// Package hostprobe gives tests the means to prove that a script cannot
// reach the host: a directory watch that sees every open of a file in it
// (Watch, Linux only), and scripts that make the JavaScript engine compile
// source text through every compile path a script can reach
// (SourceMapProbes).
//
// It is test support shared by the engine's and the worker pool's tests;
// production code must not import it.
package hostprobe

import (
	"strconv"
	"strings"
)

// Probe is one script: the body of ptc's async main function. It returns
// the string "ok" when the compile path it exercises works.
type Probe struct {
	Name   string
	Source string
}

// SourceMapProbes returns one probe per compile path a script can reach:
// the program itself, direct and indirect eval, the Function, generator
// and async function constructors however they are reached, and nested
// evaluation. Each compiles text whose last line is
// "//# sourceMappingURL=" + url, which goja, by default, resolves and
// reads from the filesystem.
func SourceMapProbes(url string) []Probe {
	mapLine := "\n//# sourceMappingURL=" + url
	lit := func(body string) string { return strconv.Quote(body + mapLine) }
	probes := []Probe{
		{"program", `return "ok"` + mapLine},
		{"program with trailing newline", `return "ok"` + mapLine + "\n"},
		{"direct eval", `return eval(` + lit(`"ok"`) + `)`},
		{"direct eval in strict code", `return (function () { "use strict"; return eval(` + lit(`"ok"`) + `) })()`},
		{"indirect eval", `return (0, eval)(` + lit(`"ok"`) + `)`},
		{"globalThis.eval", `return globalThis.eval(` + lit(`"ok"`) + `)`},
		{"eval.call", `return eval.call(null, ` + lit(`"ok"`) + `)`},
		{"Reflect.apply(eval)", `return Reflect.apply(eval, null, [` + lit(`"ok"`) + `])`},
		{"eval inside eval", `return eval("eval(" + JSON.stringify(` + lit(`"ok"`) + `) + ")")`},
		{"Function", `return Function(` + lit(`return "ok"`) + `)()`},
		{"new Function with parameters", `return new Function("a", "b", ` + lit(`return a + b`) + `)("o", "k")`},
		{"Function.prototype.constructor", `return (function () {}).constructor(` + lit(`return "ok"`) + `)()`},
		{"Reflect.construct(Function)", `return Reflect.construct(Function, [` + lit(`return "ok"`) + `])()`},
		{"bound Function", `return Function.bind(null, ` + lit(`return "ok"`) + `)()()`},
		{"class extends Function", `class F extends Function {}; return new F(` + lit(`return "ok"`) + `)()`},
		{"GeneratorFunction", `const G = Object.getPrototypeOf(function* () {}).constructor; return G(` + lit(`yield "ok"`) + `)().next().value`},
		{"new GeneratorFunction", `const G = Object.getPrototypeOf(function* () {}).constructor; return new G(` + lit(`yield "ok"`) + `)().next().value`},
		{"AsyncFunction", `const A = Object.getPrototypeOf(async function () {}).constructor; return await A(` + lit(`return "ok"`) + `)()`},
		{"Function inside eval", `return eval("Function(" + JSON.stringify(` + lit(`return "ok"`) + `) + ")()")`},
		{"eval inside Function", `return Function("return eval(" + JSON.stringify(` + lit(`"ok"`) + `) + ")")()`},
	}
	return probes
}

// Relative returns url without its directory, for probes that name the
// map relative to the working directory.
func Relative(url string) string {
	if i := strings.LastIndexByte(url, '/'); i >= 0 {
		return url[i+1:]
	}
	return url
}
