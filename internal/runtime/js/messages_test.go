package js_test

import (
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// TestSyntaxErrorsStayInTheScript checks the syntax errors of scripts
// that do not close what they open, or close what they did not: the
// script runs inside a wrapper function, but the error names the script's
// own bracket or its last line, at a position inside the script, never
// the wrapper's tokens.
func TestSyntaxErrorsStayInTheScript(t *testing.T) {
	e := js.New()
	cases := []struct {
		name      string
		src       string
		line, col int
		msg       string
	}{
		{"operand missing", "return 1 +", 1, 10, "SyntaxError: unexpected end of script: close every '{', '(', '[', string, template literal and comment"},
		{"unclosed if", "if (x) {\n  return 1", 2, 10, "SyntaxError: unexpected end of script: the '{' opened at line 1, column 8 is not closed"},
		{"unclosed call", "return f(1,", 1, 11, "SyntaxError: unexpected end of script: the '(' opened at line 1, column 9 is not closed"},
		{"unclosed object", "return {a: 1", 1, 12, "SyntaxError: unexpected end of script: the '{' opened at line 1, column 8 is not closed"},
		{"unclosed function, blank lines after", "function f() {\n  return 1\n\n", 2, 10, "SyntaxError: unexpected end of script: the '{' opened at line 1, column 14 is not closed"},
		{"unclosed template", "const s = `abc", 1, 14, "SyntaxError: unexpected end of script: the template literal opened at line 1, column 11 is not closed"},
		{"unclosed comment", "return 1 /* note", 1, 16, "SyntaxError: unexpected end of script: the comment opened at line 1, column 10 is not closed"},
		{"stray brace", "return 1 }", 1, 10, "SyntaxError: unbalanced braces: this '}' closes nothing (the script is the body of a function, which it would close): remove it or add the missing '{'"},
		{"stray brace, code after", "const a = 1;\n}\nreturn a", 2, 1, "SyntaxError: unbalanced braces: this '}' closes nothing (the script is the body of a function, which it would close): remove it or add the missing '{'"},
		{"stray paren", "return 1 )", 1, 10, "SyntaxError: unbalanced brackets: this ')' closes nothing: remove it or add the missing '('"},
		{"mismatched bracket", "return f([1, 2)", 1, 15, "SyntaxError: unbalanced brackets: this ')' comes before the '[' opened at line 1, column 10 is closed: close it with ']' first, or remove the ')'"},
		{"unterminated string", "return \"abc\nreturn 2", 1, 8, "SyntaxError: unterminated string: close it on the same line (a template literal `...` may span lines)"},
		{"an error inside stays as it is", "const a = [1, 2,\nreturn a", 2, 1, "SyntaxError: Unexpected token return"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, _ := run(t, e, tc.src, runOpts{})
			if out.Err == nil || out.Err.Kind != fault.KindSyntax {
				t.Fatalf("got %v, want a SYNTAX_ERROR", out.Err)
			}
			if out.Err.Message != tc.msg || out.Err.Line != tc.line || out.Err.Column != tc.col {
				t.Fatalf("got %d:%d %s\nwant %d:%d %s", out.Err.Line, out.Err.Column, out.Err.Message, tc.line, tc.col, tc.msg)
			}
			lines := strings.Split(tc.src, "\n")
			if out.Err.Line > len(lines) || out.Err.Column > len(lines[out.Err.Line-1]) {
				t.Fatalf("%d:%d is outside the script", out.Err.Line, out.Err.Column)
			}
		})
	}
}

// TestUncaughtToolErrorPosition checks that an uncaught tool error is
// reported at the call that failed (not where it was awaited), and that a
// caught one carries the call site in its stack.
func TestUncaughtToolErrorPosition(t *testing.T) {
	e := js.New()
	cases := []struct {
		name      string
		src       string
		line, col int
		stack     string
	}{
		{"awaited at the call", "const a = 1;\nawait tools.fail({});", 2, 17, "at script.js:2:17"},
		{"awaited later", "const p = tools.fail({});\nconst b = 2;\nawait p;", 1, 21, "at script.js:1:21"},
		{"argument error", "\n\nawait tools.add({a: 'x'});", 3, 16, "at script.js:3:16"},
		{"from a function", "function g() {\n  return tools.fail({});\n}\nawait Promise.all([g()]);", 2, 20, "at script.js:2:20"},
		{"invalid output", "\nawait tools.badout({});", 2, 19, "at script.js:2:19"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, _ := run(t, e, tc.src, runOpts{})
			if out.Err == nil || out.Err.Tool == "" {
				t.Fatalf("got %v, want an uncaught tool error", out.Err)
			}
			if out.Err.Line != tc.line || out.Err.Column != tc.col || out.Err.Stack != tc.stack {
				t.Fatalf("got %d:%d %q, want %d:%d %q (%s)", out.Err.Line, out.Err.Column, out.Err.Stack, tc.line, tc.col, tc.stack, out.Err.Message)
			}
		})
	}
	out, _, _ := run(t, e, "try {\n  await tools.fail({});\n} catch (e) {\n  return [e.name, e.code, e.stack];\n}", runOpts{})
	if out.Err != nil || string(out.Result) != `["ToolError","not_found","ToolError: no such thing\n\tat script.js:2:19"]` {
		t.Fatalf("caught: %s %v", out.Result, out.Err)
	}
}

// TestNullInputMessage checks that reading a property of the input of a
// request without input says null, the value the script has, where goja
// says undefined.
func TestNullInputMessage(t *testing.T) {
	e := js.New()
	const why = " (input is null: the request has no input)"
	cases := []struct {
		name, src, input, msg string
	}{
		{"property", "return input.a", "", "uncaught TypeError: Cannot read property 'a' of null" + why},
		{"explicit null input", "return input.a", "null", "uncaught TypeError: Cannot read property 'a' of null" + why},
		{"index", "const k = 'a';\nreturn input[k]", "", "uncaught TypeError: Cannot read property 'a' of null" + why},
		{"method call", "return input.items.map(x => x)", "", "uncaught TypeError: Cannot read property 'items' of null" + why},
		{"destructuring", "const {a} = input; return a", "", "uncaught TypeError: Cannot destructure null" + why},
		{"assignment", "input.a = 1", "", "uncaught TypeError: Cannot convert null to object" + why},
		{"a missing field of a real input", "return input.a.b", `{}`, "uncaught TypeError: Cannot read property 'b' of undefined"},
		{"another variable", "const x = undefined; return x.a", "", "uncaught TypeError: Cannot read property 'a' of undefined"},
		{"a property named input", "const o = {input: undefined}; return o.input.a", "", "uncaught TypeError: Cannot read property 'a' of undefined"},
		{"input reassigned", "input = undefined; return input.a", "", "uncaught TypeError: Cannot read property 'a' of undefined"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, _ := run(t, e, tc.src, runOpts{input: tc.input})
			if out.Err == nil || out.Err.Message != tc.msg {
				t.Fatalf("got %v\nwant %s", out.Err, tc.msg)
			}
		})
	}
}
