package jsnest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNestingEstimateOfRealScripts: the scripts shipped with ptc (examples,
// test data) stay far below the nesting limit.
func TestNestingEstimateOfRealScripts(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../../examples/*/*.js", "../../examples/*.js", "../runtime/ts/testdata/*.js", "../../examples/*/*.ts", "../runtime/ts/testdata/*.ts"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("no scripts found")
	}
	worst := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := Depth(string(b))
		if d > worst {
			worst = d
		}
		if d > Max/10 {
			t.Errorf("%s: nesting estimate %d", f, d)
		}
	}
	t.Logf("%d scripts, deepest estimate %d (limit %d)", len(files), worst, Max)
}

func TestNestingEstimate(t *testing.T) {
	n := Max + 10
	r := strings.Repeat
	deep := []struct{ name, src string }{
		{"arrays", r("[", n) + r("]", n)},
		{"parens", r("(", n) + "1" + r(")", n)},
		{"objects", "x = " + r("{a:", n) + "1" + r("}", n)},
		{"blocks", r("{", n) + r("}", n)},
		{"not", r("!", n) + "x"},
		{"minus", r("- ", n) + "x"},
		{"typeof", r("typeof ", n) + "x"},
		{"sum", "1" + r("+1", n)},
		{"sum over lines", "x = 1" + r(" +\n 1", n)},
		{"assignments", r("a=", n) + "1"},
		{"conditionals", r("a?b:", n) + "c"},
		{"arrows", r("a=>", n) + "1"},
		{"member chain", "a" + r(".b", n)},
		{"optional chain", "a" + r("?.b", n)},
		{"call chain", "f" + r("()", n)},
		{"index chain", "a" + r("[0]", n)},
		{"new", r("new ", n) + "F"},
		{"await", r("await ", n) + "x"},
		{"if", r("if(a)", n) + "x"},
		{"else if", r("if(a){}else ", n) + "{}"},
		{"labels", func() string {
			var b strings.Builder
			for i := 0; i < n; i++ {
				b.WriteString("l")
				b.WriteString(strings.Repeat("x", i%7+1))
				b.WriteString(":")
			}
			return b.String() + "x"
		}()},
		{"functions", r("(function(){", n/2+5) + r("})", n/2+5)},
		{"templates", r("`${", n) + r("}`", n)},
		{"template in template text", "`" + r("${`", n) + r("`}", n) + "`"},
		{"power", r("2**", n) + "1"},
		{"spread", r("[...", n) + r("]", n)},
		{"regexp then nesting", "x = /[/]/;" + r("[", n) + r("]", n)},
		{"division then nesting", "x = a / b / c;" + r("[", n) + r("]", n)},
		{"string with closers", "x = ']]]]';" + r("[", n) + r("]", n)},
		{"comment with closers", "/* ]]]] */ // ]]]]\n" + r("[", n) + r("]", n)},
		{"closers in a regexp after if", "if (x) /]]]]/.test(y);" + r("[", n) + r("]", n)},
		{"nesting inside a call argument", "f(" + r("[", n) + r("]", n) + ")"},
		{"nesting inside a template substitution", "`${" + r("[", n) + r("]", n) + "}`"},
	}
	for _, c := range deep {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(c.src)
			if err == nil {
				t.Fatalf("not refused (estimate %d)", Depth(c.src))
			}
			if err.Line < 1 || err.Column < 1 {
				t.Fatalf("position %d:%d", err.Line, err.Column)
			}
		})
	}

	shallow := []struct {
		name string
		src  string
		max  int
	}{
		{"many statements", r("x = a + b * c;\n", 5000), 10},
		{"many statements without semicolons", r("x = a + b * c\n", 5000), 10},
		{"many blocks", r("if (a) { b() } else { c() }\n", 5000), 10},
		{"long list", "[" + r("1, ", 10000) + "1]", 10},
		{"long object", "x = {" + r("a: 1, ", 10000) + "}", 10},
		{"method chain", "a" + r(".b()", 50), 110},
		{"regexp with brackets", r("x = /[(\\[{]+/.test(s);\n", 5000), 10},
		{"regexp after a keyword", r("if (typeof /((/ === 'x') {}\n", 1000), 10},
		{"regexp after a block", r("{ }\n/((((/.test(s)\n", 1000), 10},
		{"divisions in parentheses", r("x = f(a / 2) + (b / c);\n", 5000), 10},
		{"strings with brackets", r("x = '((' + \"[[\" + `{{`;\n", 5000), 10},
		{"template substitutions", r("x = `a${b}c${d + e}`;\n", 5000), 10},
		{"arrow functions", r("xs.map((x) => { return x * 2 });\n", 5000), 10},
		{"functions", r("function f(a) { return a / 2 }\n", 5000), 10},
		{"class", r("class A { m() { return 1 } get x() { return 2 } }\n", 1000), 10},
		{"switch", r("switch (x) { case 1: y(); break; default: z() }\n", 1000), 10},
		{"for await", "for await (const x of xs) { y / 2 }", 10},
	}
	for _, c := range shallow {
		t.Run(c.name, func(t *testing.T) {
			if d := Depth(c.src); d > c.max {
				t.Fatalf("estimate %d, want at most %d", d, c.max)
			}
		})
	}
}

func TestGenerators(t *testing.T) {
	cases := []struct {
		src  string
		want bool
	}{
		{"function* g() { yield 1 }", true},
		{"const g = function *() {}", true},
		{"class A { *items() {} }", true},
		{"x = { *[Symbol.iterator]() {} }", true},
		{"async function* g() {}", true},
		{"x = a * b; y = 2 ** 3; z *= 2", false},
		{"// function* g() {}\n'function*'; `function*`", false},
	}
	for _, c := range cases {
		if info, _ := Check(c.src); info.Generators != c.want {
			t.Errorf("%q: Generators = %v", c.src, info.Generators)
		}
	}
}

func TestScanNames(t *testing.T) {
	watch := map[string]uint{"JSON": 0, "Reflect": 1, "this": 2}
	cases := []struct {
		src     string
		names   uint64
		escaped bool
		regexps bool
	}{
		{"return JSON.stringify(x)", 1, false, false},
		{"x.Reflect; 'JSON'; // this", 2, false, false},
		{"`${this}`", 4, false, false},
		{"\\u004aSON.parse('1')", 0, true, false},
		// A pattern's words count as names too, should the parser read
		// its '/' as a division.
		{"x = /JSON/.test(y)", 1, false, true},
	}
	for _, c := range cases {
		info, _ := Scan(c.src, watch)
		if info.Names != c.names || info.Escaped != c.escaped || info.RegExps != c.regexps {
			t.Errorf("%q: %+v", c.src, info)
		}
	}
}

func TestRegExpNesting(t *testing.T) {
	deep := strings.Repeat("(", Max+1) + strings.Repeat(")", Max+1)
	if CheckRegExp(deep) == nil {
		t.Fatal("deep pattern not refused")
	}
	for _, p := range []string{`(a)(b)\((c)`, `[((((((]`, `\(\(\(`, `((a|b)+)*`} {
		if err := CheckRegExp(p); err != nil {
			t.Errorf("%q refused: %v", p, err)
		}
	}
	if _, err := Check("x = /" + deep + "/"); err == nil {
		t.Fatal("deep literal not refused")
	}
	info, err := Scan(`a = /x(y)/g.test(s); b = /\/[/]/`, map[string]uint{})
	if err != nil || len(info.Patterns) != 2 || info.Patterns[0] != (Pattern{`x(y)`, "g"}) || info.Patterns[1].Source != `\/[/]` {
		t.Fatalf("%+v %v", info.Patterns, err)
	}
}

func TestScanAccess(t *testing.T) {
	cases := []struct {
		src  string
		want bool
	}{
		// Nothing read by key.
		{"return {ok: 1}", false},
		{"const o = {a: 1, b: {c: 2}}; return o", false},
		{"let x = 1.5 + .5; x += 2; return `${x}`", false},
		{"function f(a, b) { return a + b } return f(1, 2)", false},
		{"if (x) { y = 1 } else { y = 2 }", false},
		{"'a.b'; \"[\"; // .x\n /* [y] */ return 1", false},
		{"return {get x() { return 1 }}", false},
		{"class A { m() { return 1 } }", false},
		{"x = {a: 1} == y", false},
		// Reads.
		{"return input.x", true},
		{"return a?.b", true},
		{"return f(...a)", true},
		{"return {...a}", true},
		{"return a[0]", true},
		{"return [1, 2]", true},
		{"with (o) { x }", true},
		{"const {toString} = {}", true},
		{"let {a} = b", true},
		{"var {a: {b}} = c", true},
		{"for (const {a} of b) {}", true},
		{"function f({a}) {}", true},
		{"function f(x, {a} = {}) {}", true},
		{"const f = ({a}) => a", true},
		{"try {} catch ({message}) {}", true},
		{"({a} = b)", true},
		{"x = {a} = b", true},
		{"f(0, {a} = b)", true},
		{"f({a: 1})", true},                    // after '(': could be a pattern
		{"const f = (a) => ({a}); f(1)", true}, // likewise
	}
	for _, c := range cases {
		if info, _ := Check(c.src); info.Access != c.want {
			t.Errorf("%q: Access = %v, want %v", c.src, info.Access, c.want)
		}
	}
}

func TestCheckWithin(t *testing.T) {
	b := Bounds{Brackets: 4, Arrows: 3}
	tests := []struct {
		name      string
		src       string
		limit     Limit
		fail      bool
		line, col int
		arrows    int
	}{
		{"arrows at the bound", "a => b => c => 1", 0, false, 0, 0, 3},
		{"arrows past the bound", "a => b => c => \nd => 1", Arrows, true, 2, 3, 4},
		{"arrows in strings, comments, templates and regexps", "'=>=>=>=>'; \"=>=>=>=>\"; // => => => =>\n/* => => => => */ `=> => => => ${1}`; /=>=>=>=>/", 0, false, 0, 0, 0},
		{"brackets at the bound", "(([[1]]))", 0, false, 0, 0, 0},
		{"brackets past the bound", "x = ([{[(1)]}])", Brackets, true, 1, 9, 0},
		{"a substitution is a bracket", "x = `${`${`${`${`${1}`}`}`}`}`", Brackets, true, 1, 18, 0},
		{"brackets in strings and comments", "'(((((((('; // [[[[[[[[\n/* {{{{{{{{ */ 1", 0, false, 0, 0, 0},
		{"the estimate still applies", strings.Repeat("!", Max+1) + "x", Estimate, true, 1, Max + 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := CheckWithin(tt.src, b)
			if !tt.fail {
				if err != nil {
					t.Fatalf("CheckWithin: %v", err)
				}
				if info.Arrows != tt.arrows {
					t.Errorf("Arrows = %d, want %d", info.Arrows, tt.arrows)
				}
				return
			}
			if err == nil {
				t.Fatal("CheckWithin accepted the text")
			}
			if err.Limit != tt.limit || err.Line != tt.line || err.Column != tt.col {
				t.Errorf("error %v (limit %d) at %d:%d, want limit %d at %d:%d", err, err.Limit, err.Line, err.Column, tt.limit, tt.line, tt.col)
			}
		})
	}
}

// TestCheckWithinMessages: each limit names itself and its bound.
func TestCheckWithinMessages(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{Limit: Estimate, Bound: Max}, "nests more than 1000 levels deep"},
		{Error{Limit: Brackets, Bound: 256}, "nests brackets more than 256 deep"},
		{Error{Limit: Arrows, Bound: 256}, "more than 256 arrow functions"},
	}
	for _, tt := range tests {
		if got := tt.err.Message(); !strings.Contains(got, tt.want) {
			t.Errorf("Message() = %q, want %q in it", got, tt.want)
		}
	}
}

// TestSlashAfterKeywordOrName: a `/` right after yield or await (or of on
// a new line), each a keyword or a name depending on where it stands, may
// start a regular expression or divide. Read as a regular expression when it
// divides, the code up to the next `/` went unscanned (its names, its
// property reads, its nesting); it is refused instead. A `/` elsewhere is
// scanned as before.
func TestSlashAfterKeywordOrName(t *testing.T) {
	refused := []string{
		"var yield = 2; yield / 1 + o.x / 1",
		"function f(await) { return await / 1 + o.x / 1 }",
		"function* g() { yield /a/ }",
		"var yield = 1; yield ++ / 2 /*\n*/ + o.x",
		"x = await /* c */ /a/",
		"x\nof /a/",
	}
	for _, src := range refused {
		_, err := Check(src)
		if err == nil || err.Limit != Slash {
			t.Errorf("%q: %v, want the Slash refusal", src, err)
		} else if !strings.Contains(err.Error(), "in parentheses") {
			t.Errorf("%q: %q does not say how to write it", src, err)
		}
	}
	// of is a name after an operator and the keyword after an operand
	// on its line: the parser's reading, so the '/' after it is scanned.
	// So is let when no binding follows it.
	for _, src := range []string{"let of = 2; let z = of / 1; o.x = 1; z = z / of", "x = of\n/ 2; o.x", "var let = 1; let / 1 + o.x / 1", "let ++ / .5 /*\n*/ o.x"} {
		if info, err := Check(src); err != nil || !info.Access {
			t.Errorf("%q: %v, Access %v; want it scanned whole", src, err, info.Access)
		}
	}
	accepted := []string{
		"for (const m of /a/g.exec(s)) {}",
		"for (const of of /a/g.exec(s)) {}",
		"for (const m of (/a/g).exec(s)) {}",
		"function* g() { yield (/a/) }",
		"x = (of) / 2",
		"x = a / 2 / b",
		"if (x) /a/.test(s)",
		"x = typeof /a/",
		"x = ofs / 2",
		"let x = a / b",
	}
	for _, src := range accepted {
		if _, err := Check(src); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
}

// TestScanAgreesWithTheParser: text where the scan once read a string, a
// template, a regular expression or a comment where goja's parser reads
// code (or the reverse), so that the code behind went unscanned: its
// property read (H here, the only one in each) was missed, as deep
// nesting there would have been. Each is now either seen or refused.
func TestScanAgreesWithTheParser(t *testing.T) {
	const h = "o.x"
	cases := []string{
		"async function f(){}\n/`/; " + h + " //`",
		"if (false) return\n{}\n/`/; " + h + " //`",
		"for (;;) { break\n{}\n/`/; " + h + " //`\n}",
		"var a\n/`/; " + h + " //`",
		"let a\n/`/; " + h + " //`",
		"var a /*\u2028*/ {}\n/`/; " + h + " //`",
		"var a = 1\n++/`/.lastIndex; " + h + " //`",
		"var p = { return() { {} /`/; " + h + "; //`\n} }",
		"class A { typeof() { {} /`/; " + h + "; //`\n} }",
		"class A { static { {} /`/; " + h + " //`\n} }",
		"class A extends (f({})) {}\n/`/; " + h + " //`",
		"var a = {in: 4}; var r = a./**/in / 2; " + h + "; var z = 1/1",
		"var a = {in: 4}; var r = a.\vin / 2; " + h + "; var z = 1/1",
		"var a = {in: 4}; var r = a.\u00a0in / 2; " + h + "; var z = 1/1",
		"var r = 1. instanceof /`/; " + h + " //`",
		"var t = 0 // step 1.\ntypeof /`/; " + h + " //`",
		"async function f(){} /'/; " + h + " //'",
		"async function* f(){} /'/; " + h + " //'",
		"try {} catch { function f(){} /'/; " + h + " //'\n}",
		"class A { static { function f(){} /'/; " + h + " //'\n} }",
		"({ do() { function f(){} /'/; " + h + " //'\n} })",
		"class B extends class {} { m() { function f(){} /'/; " + h + " //'\n} }",
		"x = `${ function(){ try{}catch{} /}/\n}( " + h + " ) }`",
		"if (0) return /*\n*/ function f(){} /'/; " + h + " //'",
		"if (0) return /*\u2028*/ function f(){} /'/; " + h + " //'",
		"x =\u0085/`/\n+ " + h + "\n//`",
		"return\u0085/`/\n+ " + h + "\n//`",
		"#!`\n" + h + "\n//`",
		"x = /a/in /`/ + " + h + "\n//`",
		"x = /a/instanceof /`/ + " + h + "\n//`",
		"x = /a/\u0085in /`/ + " + h + "\n//`",
		"return 1..x",
		"return 1.5.x",
		"return 1e3.x",
		"return 1n.x",
		"return .5.x",
	}
	for _, src := range cases {
		info, err := Check(src)
		if err == nil && !info.Access {
			t.Errorf("%q: scanned without the property read and not refused", src)
		}
	}
	// Still read as before.
	for _, c := range []struct {
		src    string
		access bool
	}{
		{"x = a / 2 + '/'", false},
		{"x = a\n/ 2", false},
		{"x = {a: 1} / 2", false},
		{"return x++ / 2", false},
		{"if (x) {} /a/.test(s)", true},
		{"return 1.5 + .5 + 1e3 + 0x1f + 1_000n", false},
		{"return\n{}", false},
		{"x = y\n++z", false},
		{"x = /a/gi; y = /b/u", false},
		{"#!/usr/bin/env node\nreturn 1", false},
	} {
		info, err := Check(c.src)
		if err != nil || info.Access != c.access {
			t.Errorf("%q: Access %v, %v; want %v and no error", c.src, info.Access, err, c.access)
		}
	}
}
