package js_test

import (
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// goWords are fragments of Go's own error texts (the runtime's, and
// encoding/json's), which no script or client message may show.
var goWords = []string{"runtime error", "makeslice", "growslice", "out of range", "cannot unmarshal", "Go value", "json: ", "goroutine", "panic"}

// noGoText fails t if s holds Go's words.
func noGoText(t *testing.T, s string) {
	t.Helper()
	for _, w := range goWords {
		if strings.Contains(s, w) {
			t.Fatalf("%q shows Go's text %q", s, w)
		}
	}
}

// TestNoGoTextInErrors: what Go refuses inside the engine reaches the
// script as a proper JavaScript error, and the client as a message, in
// ptc's words.
func TestNoGoTextInErrors(t *testing.T) {
	e := js.New()
	caught := `try { %s; return "no error" } catch (e) { return [e.name, e.message, e instanceof %s] }`
	cases := []struct {
		name, src, want string
	}{
		{"BigInt.asUintN of a huge width", fmtJS(caught, `BigInt.asUintN(2**53 - 1, -1n)`, "RangeError"),
			`["RangeError","BigInt.asUintN would make a BigInt of 9007199254740991 bits, more than the 1073741824 the memory limit allows; use fewer bits",true]`},
		// -1n fits in any signed width: the value itself, as ECMAScript
		// says, without building the width.
		{"BigInt.asIntN of a huge width", `return String(BigInt.asIntN(2**53 - 1, -1n))`, `"-1"`},
		{"sort comparator emptying the array", fmtJS(caught, `const a = [5, 1, 4, 2, 3, 9, 7, 8, 6, 0, 11, 10]; a.sort((x, y) => { a.length = 0; return x - y })`, "TypeError"),
			`["TypeError","sort: the built-in function failed on its arguments",true]`},
		{"BigInt reached through a value", fmtJS(caught, `(1n).constructor.asUintN(2**53 - 1, -1n)`, "RangeError"),
			`["RangeError","BigInt.asUintN would make a BigInt of 9007199254740991 bits, more than the 1073741824 the memory limit allows; use fewer bits",true]`},
		{"BigInt reached through the global object", fmtJS(caught, `globalThis["Big" + "Int"].asUintN(2**53 - 1, -1n)`, "RangeError"),
			`["RangeError","BigInt.asUintN would make a BigInt of 9007199254740991 bits, more than the 1073741824 the memory limit allows; use fewer bits",true]`},
		{"BigInt.asUintN still works", `return [BigInt.asUintN(8, -1n), BigInt.asIntN(8, 255n)].map(String)`, `["255","-1"]`},
		{"JSON.parse of an out-of-range number", `return String(JSON.parse("1e400"))`, `"Infinity"`},
		{"JSON.parse of bad text", fmtJS(caught, `JSON.parse("[1e400")`, "SyntaxError"),
			`["SyntaxError","JSON.parse: invalid JSON at offset 6: unexpected end in array",true]`},
		{"JSON.parse of a bad literal", fmtJS(caught, `JSON.parse('{"a": tru}')`, "SyntaxError"),
			`["SyntaxError","JSON.parse: invalid JSON at offset 6: invalid literal",true]`},
		{"JSON.parse of an unpaired surrogate", fmtJS(caught, `JSON.parse("\ud800")`, "SyntaxError"),
			`["SyntaxError","JSON.parse: invalid JSON at offset 0: unexpected character '\\ud800'",true]`},
		{"JSON.parse of a letter outside ASCII", fmtJS(caught, `JSON.parse("é")`, "SyntaxError"),
			`["SyntaxError","JSON.parse: invalid JSON at offset 0: unexpected character 'é'",true]`},
		{"JSON.parse of a bad escape", fmtJS(caught, `JSON.parse('"\\x"')`, "SyntaxError"),
			`["SyntaxError","JSON.parse: invalid JSON at offset 3: invalid escape",true]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, _ := run(t, e, c.src, runOpts{})
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if string(out.Result) != c.want {
				t.Fatalf("got %s, want %s", out.Result, c.want)
			}
			noGoText(t, string(out.Result))
		})
	}
	t.Run("uncaught", func(t *testing.T) {
		out, _, _ := run(t, e, `return BigInt.asUintN(2**53 - 1, -1n)`, runOpts{})
		if out.Err == nil || out.Err.Kind != fault.KindScript || !strings.Contains(out.Err.Message, "uncaught RangeError: BigInt.asUintN") {
			t.Fatalf("got %v", out.Err)
		}
		noGoText(t, out.Err.Message)
	})
}

func fmtJS(format string, args ...string) string {
	for _, a := range args {
		format = strings.Replace(format, "%s", a, 1)
	}
	return format
}
