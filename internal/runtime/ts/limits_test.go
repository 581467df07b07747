package ts

import (
	"errors"
	"strings"
	"testing"
)

func TestComplexityLimits(t *testing.T) {
	tests := []struct {
		name string
		src  string
		msg  string // empty: must transpile
		line int
	}{
		{"nesting at the limit", "return " + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting), "", 0},
		{"nesting over the limit", "const a = 1;\nreturn " + strings.Repeat("(", maxNesting+1) + "1" + strings.Repeat(")", maxNesting+1), "nests brackets", 2},
		{"nested functions over the limit", strings.Repeat("function f() {\n", maxNesting+1) + strings.Repeat("}\n", maxNesting+1), "nests brackets", maxNesting + 1},
		{"template substitutions count", "return " + strings.Repeat("`${", maxNesting+1) + "1" + strings.Repeat("}`", maxNesting+1), "nests brackets", 1},
		{"brackets in strings and comments do not count", "// " + strings.Repeat("(", 1000) + "\nconst s = '" + strings.Repeat("[", 1000) + "';\n/* " + strings.Repeat("{", 1000) + " */\nconst t = `" + strings.Repeat("(", 1000) + "`;\nreturn s.length + t.length", "", 0},
		{"sequential brackets do not add up", strings.Repeat("f((1));\n", 2000) + "function f(x: number) { return x }", "", 0},
		{"arrows at the limit", strings.Repeat("const f = () => 1;\n", maxArrows) + "return f()", "", 0},
		{"arrows over the limit", "return " + strings.Repeat("x=>", maxArrows+1) + "1", "more than 256 arrow functions", 1},
		{"300 real arrow functions", strings.Repeat("const f = () => 1;\n", 299) + "return [1].map((x: number) => x)", "more than 256 arrow functions", maxArrows + 1},
		{"300 arrows in a string", "return '" + strings.Repeat("=>", 300) + "'", "", 0},
		{"300 arrows in a comment", "// " + strings.Repeat("=>", 300) + "\n/* " + strings.Repeat("x => ", 300) + " */\nreturn 1", "", 0},
		{"300 arrows in a template", "return `" + strings.Repeat("=> ${1} ", 300) + "`", "", 0},
		{"300 arrows in a regular expression", "return /" + strings.Repeat("=>", 300) + "/.test('x')", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			if tt.name == "arrows at the limit" {
				// Distinct names so the script is valid.
				var b strings.Builder
				for i := 0; i < maxArrows; i++ {
					b.WriteString("const f")
					b.WriteString(strings.Repeat("x", i%7))
					b.WriteString(string(rune('a' + i%26)))
					b.WriteString(strings.Repeat("y", i/26))
					b.WriteString(" = () => 1;\n")
				}
				src = b.String() + "return 1"
			}
			_, err := transpile(src)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("transpile: %v", err)
				}
				return
			}
			var se *syntaxError
			if !errors.As(err, &se) {
				t.Fatalf("transpile error = %v, want *syntaxError", err)
			}
			if !strings.Contains(se.Message, tt.msg) || se.Line != tt.line {
				t.Errorf("error = %q at line %d, want %q at line %d", se.Message, se.Line, tt.msg, tt.line)
			}
		})
	}
}
