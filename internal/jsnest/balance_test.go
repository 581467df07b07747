package jsnest

import "testing"

func TestBalance(t *testing.T) {
	cases := []struct {
		name string
		src  string
		ok   bool
		want Imbalance
	}{
		{"balanced", "if (a) { return [1, 2] }", false, Imbalance{}},
		{"balanced with strings and comments", "const s = '{(['; /* { */ // (\nreturn `${a}` + /[(]/.source", false, Imbalance{}},
		{"open operand", "return 1 +", false, Imbalance{}},
		{"unclosed brace", "if (x) {\n  return 1", true, Imbalance{What: "'{'", Line: 1, Column: 8}},
		{"unclosed call", "return f(1,", true, Imbalance{What: "'('", Line: 1, Column: 9}},
		{"innermost", "f({a: [1,\n2", true, Imbalance{What: "'['", Line: 1, Column: 7}},
		{"unclosed template", "const s = `abc", true, Imbalance{What: "template literal", Line: 1, Column: 11}},
		{"unclosed substitution", "const s = `a${f(", true, Imbalance{What: "'('", Line: 1, Column: 16}},
		{"inside a substitution", "const s = `a${b", true, Imbalance{What: "'${'", Line: 1, Column: 13}},
		{"unclosed comment", "return 1 /* open\nmore", true, Imbalance{What: "comment", Line: 1, Column: 10}},
		{"extra brace", "return 1 }", true, Imbalance{Extra: true, What: "'}'", Line: 1, Column: 10}},
		{"extra brace, later code", "const a = 1;\n}\nreturn a", true, Imbalance{Extra: true, What: "'}'", Line: 2, Column: 1}},
		{"extra paren", "return (1))", true, Imbalance{Extra: true, What: "')'", Line: 1, Column: 11}},
		{"mismatch", "f([1, 2)", true, Imbalance{Extra: true, What: "')'", Line: 1, Column: 8, Open: "'['", OpenLine: 1, OpenColumn: 3}},
		{"regexp with brackets", "return /[{(]/.test(s)", false, Imbalance{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Balance(tc.src)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Balance = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestLastChar(t *testing.T) {
	cases := []struct {
		src       string
		line, col int
	}{
		{"return 1 +", 1, 10}, {"if (x) {\n  return 1\n\n  ", 2, 10}, {"", 1, 1}, {"a\n", 1, 1},
	}
	for _, tc := range cases {
		if l, c := LastChar(tc.src); l != tc.line || c != tc.col {
			t.Errorf("LastChar(%q) = %d:%d, want %d:%d", tc.src, l, c, tc.line, tc.col)
		}
	}
}
