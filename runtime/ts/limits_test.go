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
		{"nesting at the limit", "return " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting), "", 0},
		{"nesting over the limit", "const a = 1;\nreturn " + strings.Repeat("(", MaxNesting+1) + "1" + strings.Repeat(")", MaxNesting+1), "nests brackets", 2},
		{"nested functions over the limit", strings.Repeat("function f() {\n", MaxNesting+1) + strings.Repeat("}\n", MaxNesting+1), "nests brackets", MaxNesting + 1},
		{"template substitutions count", "return " + strings.Repeat("`${", MaxNesting+1) + "1" + strings.Repeat("}`", MaxNesting+1), "nests brackets", 1},
		{"brackets in strings and comments do not count", "// " + strings.Repeat("(", 1000) + "\nconst s = '" + strings.Repeat("[", 1000) + "';\n/* " + strings.Repeat("{", 1000) + " */\nconst t = `" + strings.Repeat("(", 1000) + "`;\nreturn s.length + t.length", "", 0},
		{"sequential brackets do not add up", strings.Repeat("f((1));\n", 2000) + "function f(x: number) { return x }", "", 0},
		{"arrows at the limit", strings.Repeat("const f = () => 1;\n", MaxArrows) + "return f()", "", 0},
		{"arrows over the limit", "return " + strings.Repeat("x=>", MaxArrows+1) + "1", "arrow functions", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			if tt.name == "arrows at the limit" {
				// Distinct names so the script is valid.
				var b strings.Builder
				for i := 0; i < MaxArrows; i++ {
					b.WriteString("const f")
					b.WriteString(strings.Repeat("x", i%7))
					b.WriteString(string(rune('a' + i%26)))
					b.WriteString(strings.Repeat("y", i/26))
					b.WriteString(" = () => 1;\n")
				}
				src = b.String() + "return 1"
			}
			_, err := Transpile(src)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("Transpile: %v", err)
				}
				return
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Transpile error = %v, want *SyntaxError", err)
			}
			if !strings.Contains(se.Message, tt.msg) || se.Line != tt.line {
				t.Errorf("error = %q at line %d, want %q at line %d", se.Message, se.Line, tt.msg, tt.line)
			}
		})
	}
}
