package js_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// TestRegexpTimeoutThrows: a match regexp2 cuts off at its timeout must not
// look like "no match". Every way to run a pattern throws a catchable
// RegExpTimeoutError instead (before the fix: false, null, -1, or the
// input unchanged).
func TestRegexpTimeoutThrows(t *testing.T) {
	// A backreference puts the pattern on regexp2; (a+)+ backtracks
	// exponentially on a near match.
	const re = `/^(a+)+\1$/`
	const s = `("a".repeat(40) + "b")`
	cases := []struct{ name, expr string }{
		{"test", re + `.test(` + s + `)`},
		{"exec", re + `.exec(` + s + `)`},
		{"exec global", `/(a+)+\1$/g.exec(` + s + `)`},
		{"exec sticky", `/(a+)+\1$/y.exec(` + s + `)`},
		{"match", s + `.match(` + re + `)`},
		{"match global", s + `.match(/(a+)+\1$/g)`},
		{"matchAll", `[...` + s + `.matchAll(/(a+)+\1$/g)]`},
		{"replace", s + `.replace(` + re + `, "x")`},
		{"replace global", s + `.replace(/(a+)+\1$/g, "x")`},
		{"replace with a function", s + `.replace(/(a+)+\1$/g, () => "x")`},
		{"replaceAll", s + `.replaceAll(/(a+)+\1$/g, "x")`},
		{"split", s + `.split(/(a+)+\1$/)`},
		{"search", s + `.search(` + re + `)`},
		{"RegExp constructor", `new RegExp("^(a+)+\\1$").test(` + s + `)`},
		{"pattern from a string", s + `.match("^(a+)+\\1$")`},
		{"search with a string", s + `.search("^(a+)+\\1$")`},
		{"pattern made in eval", `eval("/^(a+)+\\1$/").test(` + s + `)`},
		{"lookahead", `/^(?=(a+)+$)/.test(` + s + `)`},
	}
	e := js.New()
	lim := limits.Limits{CPUTime: time.Minute, Timeout: time.Minute}
	for _, c := range cases {
		// Not in parallel: many catastrophic matches at once on a small
		// machine starve the clock that stops them.
		t.Run(c.name, func(t *testing.T) {
			src := `try { return ["no error", ` + c.expr + `] } catch (e) { return [e.name, e instanceof RangeError, e.message.includes("was stopped")] }`
			out, _, _ := run(t, e, src, runOpts{limits: lim})
			if out.Err != nil || string(out.Result) != `["RegExpTimeoutError",true,true]` {
				t.Fatalf("result %s, error %v", out.Result, out.Err)
			}
		})
	}
	t.Run("uncaught", func(t *testing.T) {
		out, _, _ := run(t, e, `return `+re+`.test(`+s+`)`, runOpts{limits: lim})
		if out.Err == nil || out.Err.Kind != fault.KindScript || !strings.Contains(out.Err.Message, "RegExpTimeoutError") {
			t.Fatalf("error %v", out.Err)
		}
	})
}

// TestRegexpResults: patterns on both engines give their normal results,
// and goja's fast paths (patterns without backtracking) and the checked
// paths (once a backtracking pattern exists) agree.
func TestRegexpResults(t *testing.T) {
	const body = `const s = "alpha beta gamma alpha";
return [
  /a(l)p/.test(s), /(\w+) (\w+)/.exec(s).slice(0, 3), s.match(/a\w+/g), [...s.matchAll(/(\w)a/g)].map(m => m[0]),
  s.replace(/a/g, "A"), s.replaceAll("alpha", "Z"), s.split(/\s+/), s.search(/gamma/), s.split(/(?=a)/).length,
  /(a)\1/.test("aa"), "abab".replace(/(ab)\1/, "x"), "xyx".split(/(?<=x)/), new RegExp("b+", "g")[Symbol.replace]("abbb", "-"),
  RegExp("a").source, RegExp.name, String(RegExp), /x/.constructor === RegExp, new RegExp(/ab/g).flags,
]`
	e := js.New()
	plain, _, _ := run(t, e, body, runOpts{})
	if plain.Err != nil {
		t.Fatal(plain.Err)
	}
	// The same with a backtracking pattern in the program first.
	checked, _, _ := run(t, e, "/(a)\\1/.test('x');\n"+body, runOpts{})
	if checked.Err != nil {
		t.Fatal(checked.Err)
	}
	const want = `[true,["alpha beta","alpha","beta"],["alpha","amma","alpha"],["ha","ta","ga","ma","ha"],"AlphA betA gAmmA AlphA","Z beta gamma Z",["alpha","beta","gamma","alpha"],11,7,true,"x",["x","yx"],"a-","a","RegExp","function RegExp() { [native code] }",true,"g"]`
	if string(plain.Result) != want || string(checked.Result) != want {
		t.Fatalf("plain   %s\nchecked %s\nwant    %s", plain.Result, checked.Result, want)
	}
}

// TestRegexpPatternNesting: a pattern nesting its groups too deeply is a
// SyntaxError whatever makes it.
func TestRegexpPatternNesting(t *testing.T) {
	runProbes(t, []probeCase{
		{name: "RegExp constructor", src: `try { new RegExp("(".repeat(1e6) + ")".repeat(1e6)) } catch (e) { return e.name }`, want: `"SyntaxError"`},
		{name: "String.prototype.match", src: `try { "x".match("(".repeat(1e6) + ")".repeat(1e6)) } catch (e) { return e.name }`, want: `"SyntaxError"`},
		{name: "literal in eval", src: `try { eval("/" + "(".repeat(1e6) + ")".repeat(1e6) + "/") } catch (e) { return e.name }`, want: `"SyntaxError"`},
		{name: "literal in the program", src: "return /" + repeat("(", 1e6) + repeat(")", 1e6) + "/", kind: fault.KindSyntax, msg: "nests more than"},
	})
}
