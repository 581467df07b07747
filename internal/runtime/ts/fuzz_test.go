package ts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzTranspile checks that transpile never panics, that every failure is
// a *syntaxError with a position inside the source (or none), and that a
// success gives a program whose positions map inside the source.
func FuzzTranspile(f *testing.F) {
	seeds := []string{
		"", "return 1", "return (", "}", "})", "}); (async function(){", "import x from 'y'",
		"export {}", "await import('x')", "return import.meta", "`${", "/*", "'", "\xff",
		"enum E { A }\nreturn E.A", "for await (const x of []) {}", "class A { #x = 1 }",
		"using x = null", "@d class A {}", "/a/d", "x => x => x", "((((((", "\r\n\u2028return 1",
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "run", "*.ts"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			seeds = append(seeds, string(b))
		}
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := transpile(src)
		lines := len(lineStarts(src))
		if err != nil {
			var se *syntaxError
			if !errors.As(err, &se) {
				t.Fatalf("transpile(%q) = %v (%T), want a *syntaxError", src, err, err)
			}
			if se.Line < 0 || se.Line > lines || (se.Line > 0 && se.Column < 1) {
				t.Fatalf("transpile(%q): position %d:%d outside the %d-line source", src, se.Line, se.Column, lines)
			}
			return
		}
		if p.Compiled == nil || p.JS == "" {
			t.Fatalf("transpile(%q): empty program", src)
		}
		for l := 1; l <= len(p.jsLine); l++ {
			for _, c := range []int{1, 2, 5, 40} {
				if tl, tc, ok := p.Position(l, c); ok && (tl < 1 || tl > lines || tc < 1) {
					t.Fatalf("Position(%d, %d) = %d, %d outside the source", l, c, tl, tc)
				}
			}
		}
	})
}
