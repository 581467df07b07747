package ts

import (
	"errors"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsnest"
)

// TestWrapperEscapeIsSyntaxError: no TypeScript text can close the
// function the script is the body of, whatever esbuild makes of what
// follows; each attempt is a SYNTAX_ERROR saying so, at the brace that
// closed it.
func TestWrapperEscapeIsSyntaxError(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int // 0: not checked
	}{
		{"global side effect", `}); globalThis.x = typeof tools; (async function () { return "outside: " + x; `, 1, 1},
		{"plain function", `}); (function () { return 42; `, 1, 1},
		{"code before the brace", `return 1 }); (async function () { return 2`, 1, 10},
		{"on a later line", "const a = 1\n}); (async function () {\nreturn a", 2, 1},
		{"sequence", `}, async function () { return "second" `, 0, 0},
		{"sequence in parentheses", `}), (async function () { return "second" `, 1, 1},
		{"binary", `}) + (async function () { `, 1, 1},
		{"conditional", `}) ? 0 : (async function () { `, 0, 0},
		{"called", `}).call(this); (async function () { `, 1, 1},
		{"called on the next line", "})\n(async function () { ", 0, 0},
		{"member", `}).name, (async function () { `, 0, 0},
		{"tagged template", "})`x`; (async function () { ", 0, 0},
		{"template literal in between", "}); globalThis.t = `})${1}`; (async function () { ", 1, 1},
		{"comment in between", `} /* }) */ ); (async function () { `, 1, 1},
		{"line comment ended by U+2028", "// note\u2028}); (async function () { ", 0, 0},
		{"line comment ended by CR", "// note\r}); (async function () { ", 0, 0},
		{"script tag text", `"</script>"}); (async function () { return "</script>" `, 0, 0},
		{"class static block", `}); class A { static { globalThis.y = 1 } }; (async function () { `, 1, 1},
		{"declaration", `}); function f() {} (async function () { `, 1, 1},
		{"arrow", `}); (async () => 1); (async function () { `, 1, 1},
		{"nested wrappers", `})(); (async function () { }); (async function () { `, 0, 0},
		{"namespace", `}); namespace N { globalThis.n = 1 } (async function () { `, 1, 1},
		{"enum", `}); enum E { A = (globalThis.z = 1) } (async function () { `, 1, 1},
		{"declare", `}); declare const d: number; (async function () { `, 1, 1},
		{"generic arrow", `}); (<T,>(v: T) => v)(1); (async function () { `, 1, 1},
		{"satisfies", `}) satisfies unknown; (async function () { `, 1, 1},
		{"type assertion", `}) as unknown as never; (async function () { `, 1, 1},
		{"non-null", `})!; (async function () { `, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := transpile(c.src)
			if err == nil {
				t.Fatalf("transpiled:\n%s", p.JS)
			}
			var se *syntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a syntax error", err)
			}
			fe := se.Fault()
			if fe.Kind != fault.KindSyntax {
				t.Fatalf("kind %v", fe.Kind)
			}
			if c.line != 0 {
				if !strings.Contains(fe.Message, jsnest.ClosesWrapper) || fe.Line != c.line || fe.Column != c.col {
					t.Fatalf("%q at %d:%d, want %q at %d:%d", fe.Message, fe.Line, fe.Column, jsnest.ClosesWrapper, c.line, c.col)
				}
			}
			t.Logf("%s (%d:%d)", fe.Message, fe.Line, fe.Column)
		})
	}
}
