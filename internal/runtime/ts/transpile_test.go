package ts

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/fault"
)

// TestRunFixtures transpiles every testdata/run/*.ts script, runs it in
// goja (both as JS text and as the compiled program) and compares the
// result with the "// want: " JSON on its first line.
func TestRunFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "run", "*.ts"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".ts")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			first, _, _ := strings.Cut(src, "\n")
			want, ok := strings.CutPrefix(first, "// want: ")
			if !ok {
				t.Fatalf("%s: first line must be // want: <json>", file)
			}
			p, err := transpile(src)
			if err != nil {
				t.Fatalf("transpile: %v", err)
			}
			for _, useJS := range []bool{false, true} {
				res := runProgram(t, p, `{"department":"eng"}`, useJS, nil)
				if res.Rejected != nil {
					t.Fatalf("script rejected (useJS=%v): %s", useJS, rejectionStack(res.Rejected))
				}
				if res.JSON != want {
					t.Errorf("useJS=%v: result\n got %s\nwant %s", useJS, res.JSON, want)
				}
			}
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		msg       string // substring of the message
	}{
		{"missing expression", "const a = 1;\nlet b: number = ;\nreturn b", 2, 17, "unexpected"},
		{"bad type annotation", "interface A {}\n\n\nfunction f(x: ): void {}", 4, 15, "unexpected"},
		{"unclosed block", "const a = 1;\nif (a) {\n  return a;", 3, 11, "unexpected end of script: the '{' opened at line 2, column 8 is not closed"},
		{"unclosed string", "const s = 'abc;\nreturn s", 1, 16, "unterminated string"},
		{"unclosed template", "return `abc", 1, 11, "unexpected end of script: the template literal opened at line 1, column 8 is not closed"},
		{"unclosed comment", "return 1 /* open", 1, 16, "unexpected end of script: the comment opened at line 1, column 10 is not closed"},
		{"unclosed call", "return f(1,", 1, 11, "unexpected end of script: the '(' opened at line 1, column 9 is not closed"},
		{"operand missing at the end", "return 1 +", 1, 10, "unexpected end of script"},
		{"stray brace", "const a = 1;\n}\nreturn a", 2, 1, "unbalanced braces: this '}' closes nothing"},
		{"extra brace at the end", "return 1 }", 1, 10, "unbalanced braces"},
		{"mismatched bracket", "return f([1, 2)", 1, 15, `expected "]" but found ")"`},
		{"escape the wrapper", "return 1 }); (async function() { return 2", 1, 10, "unbalanced braces"},
		{"escape with a statement", "return 1 }); globalThis.x = 1; (async function() {", 1, 10, "unbalanced braces"},
		{"escape into an expression", "return 1 }) + (async function() {", 1, 10, "unbalanced braces"},
		{"goja compile error", "const a = 1;\nconst a = 2;", 2, 7, "a"},
		{"invalid utf-8", "const a = 1;\nconst s = '\xff';", 2, 12, "utf-8"},
		{"type error is not checked", "const n: number = 'x';\nreturn n", 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := transpile(tt.src)
			if tt.line == 0 {
				if err != nil {
					t.Fatalf("transpile: %v, want no error", err)
				}
				return
			}
			var se *syntaxError
			if !errors.As(err, &se) {
				t.Fatalf("transpile error = %v (%T), want *syntaxError", err, err)
			}
			if se.Line != tt.line || se.Column != tt.col {
				t.Errorf("position = %d:%d, want %d:%d (%s)", se.Line, se.Column, tt.line, tt.col, se.Message)
			}
			if !strings.Contains(strings.ToLower(se.Message), tt.msg) {
				t.Errorf("message %q does not contain %q", se.Message, tt.msg)
			}
			if f := se.Fault(); f.Kind != fault.KindSyntax || f.Line != se.Line || f.Column != se.Column || !strings.HasPrefix(f.Message, "SyntaxError: ") {
				t.Errorf("Fault() = %+v", f)
			}
		})
	}
}

func TestImportExportRejected(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
	}{
		{"default import", "const a = 1;\nimport x from 'y'\nreturn x", 2, 1},
		{"named import", "import { a, b } from 'mod'", 1, 1},
		{"multi-line import", "// tools\n  import {\n  a,\n} from 'mod'", 2, 3},
		{"namespace import", "import * as m from 'mod'", 1, 1},
		{"side-effect import", "import 'mod'", 1, 1},
		{"type-only import", "import type { T } from './t'\nreturn 1", 1, 1},
		{"export const", "const a = 1;\n\nexport const b = 2;", 3, 1},
		{"export default", "export default 42", 1, 1},
		{"export list", "const a = 1;\nexport { a }", 2, 1},
		{"import before a later error", "import x from 'y'\nconst = ;", 1, 1},
		{"dynamic import", "const a = 1;\nconst m = await import('fs');\nreturn m", 2, 17},
		{"import.meta", "return import.meta.url", 1, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := transpile(tt.src)
			if !errors.Is(err, errImportExport) {
				t.Fatalf("transpile error = %v, want errImportExport", err)
			}
			var se *syntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *syntaxError", err)
			}
			if se.Message != importExportMessage {
				t.Errorf("message = %q", se.Message)
			}
			if se.Line != tt.line || se.Column != tt.col {
				t.Errorf("position = %d:%d, want %d:%d", se.Line, se.Column, tt.line, tt.col)
			}
		})
	}
}

// TestImportWordsAllowed checks that "import" and "export" in strings,
// comments and property names do not trip the rejection.
func TestImportWordsAllowed(t *testing.T) {
	src := "// import x from 'y'\nconst o = { import: 1, export: 2 };\nconst s = 'import x from \"y\"';\n" +
		"/*\nexport const z = 1\n*/\nreturn [o.import, o.export, s.length]"
	p, err := transpile(src)
	if err != nil {
		t.Fatalf("transpile: %v", err)
	}
	if got := runProgram(t, p, "", false, nil).JSON; got != "[1,2,17]" {
		t.Errorf("result = %s", got)
	}
}

// stackFrame matches the first script.ts.js position in a goja stack.
var stackFrame = regexp.MustCompile(regexp.QuoteMeta(compiledName) + `:(\d+):(\d+)`)

// TestThrowPosition runs scripts that throw on a known TypeScript line and
// maps the position goja reports back with Position and MapStack. Types,
// interfaces and lowered syntax move the JavaScript lines and columns away
// from the TypeScript ones.
func TestThrowPosition(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
	}{
		{
			name: "after interfaces",
			src: "interface A {\n  x: number;\n  y: string;\n}\ntype B = A | null;\n" +
				"const a: A = { x: 1, y: 'z' };\nthrow new Error('boom ' + a.x);",
			line: 7, col: 7,
		},
		{
			name: "after lowered for await",
			src: "async function* g() { yield 1; }\nlet n: number = 0;\nfor await (const v of g()) { n += v; }\n" +
				"enum E { A, B }\n\nif (n === 1) {\n    const e: Error = new Error('x'); throw e;\n}\nreturn n;",
			line: 7, col: 22,
		},
		{
			name: "inside a function",
			src:  "function fail(msg: string): never {\n  throw new Error(msg);\n}\nconst x: number = 1;\nfail('bad ' + x);",
			line: 2, col: 9,
		},
		{
			name: "after a tool call",
			src:  "const r = await tools.echo({ v: 1 }) as { v: number };\n\n\nconst missing: any = undefined;\nreturn missing.deep.field;",
			line: 5, col: 16,
		},
		{
			name: "non-ascii before the throw",
			src:  "const s: string = 'héllo wörld';  throw new Error(s);",
			line: 1, col: 43,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := transpile(tt.src)
			if err != nil {
				t.Fatalf("transpile: %v", err)
			}
			res := runProgram(t, p, "", false, nil)
			if res.Rejected == nil {
				t.Fatalf("script resolved to %s, want a rejection", res.JSON)
			}
			stack := rejectionStack(res.Rejected)
			m := stackFrame.FindStringSubmatch(stack)
			if m == nil {
				t.Fatalf("no %s frame in stack %q", compiledName, stack)
			}
			jl, _ := strconv.Atoi(m[1])
			jc, _ := strconv.Atoi(m[2])
			line, col, ok := p.Position(jl, jc)
			if !ok || line != tt.line || col != tt.col {
				t.Errorf("Position(%d, %d) = %d, %d, %v; want %d, %d (stack %q)", jl, jc, line, col, ok, tt.line, tt.col, stack)
			}
			mapped := p.MapStack(stack, compiledName)
			want := sourceName + ":" + strconv.Itoa(tt.line) + ":" + strconv.Itoa(tt.col)
			if !strings.Contains(mapped, want) {
				t.Errorf("MapStack = %q, want it to contain %q", mapped, want)
			}
		})
	}
}

func TestPositionOutsideScript(t *testing.T) {
	p, err := transpile("async function* g() { yield 1; }\nfor await (const v of g()) {}\nreturn 1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		line, col int
	}{
		{"helper line", 1, 1},
		{"line zero", 0, 1},
		{"column zero", 3, 0},
		{"negative", -5, -5},
		{"past the end", 10000, 1},
		{"column past the line", 1, 100000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if l, c, ok := p.Position(tt.line, tt.col); ok && (l < 1 || l > 3 || c < 1) {
				t.Errorf("Position(%d, %d) = %d, %d, true: outside the script", tt.line, tt.col, l, c)
			} else if ok && tt.name != "column past the line" {
				t.Errorf("Position(%d, %d) = %d, %d, true; want ok=false", tt.line, tt.col, l, c)
			}
		})
	}
	var nilProgram *program
	if _, _, ok := nilProgram.Position(1, 1); ok {
		t.Error("nil program mapped a position")
	}
}

func TestMapStackLeavesOtherFrames(t *testing.T) {
	p, err := transpile("const a: number = 1;\nthrow new Error('x');")
	if err != nil {
		t.Fatal(err)
	}
	stack := "Error: x\n\tat other.js:2:7(3)\n\tat native\n\tat " + compiledName + ":99999:1(2)\n"
	if got := p.MapStack(stack, compiledName); got != stack {
		t.Errorf("MapStack changed frames it cannot map:\n%s", got)
	}
}

// TestGojaFeatures keeps the unsupported list honest: every feature in it
// fails to parse in goja, and each of the others that scripts commonly use
// parses, so esbuild need not lower it.
func TestGojaFeatures(t *testing.T) {
	tests := []struct {
		feature string
		snippet string
	}{
		{"async-generator", "(async function*(){ yield 1 })"},
		{"for-await", "(async function(){ for await (const x of []) {} })"},
		{"using", "(function(){ using x = null })"},
		{"decorators", "(@dec class A {})"},
		{"regexp-match-indices", "(/a/d)"},
		{"regexp-set-notation", "(/[a]/v)"},
		{"async-await", "(async function(){ await 1 })"},
		{"class-field", "(class { x = 1; static y = 2 })"},
		{"class-private-field", "(class { #x = 1; static #y; m(o){ return #x in o } })"},
		{"class-static-blocks", "(class { static {} })"},
		{"logical-assignment", "(function(a){ a ??= 1; a ||= 2; a &&= 3 })"},
		{"optional-chain", "(function(a){ return a?.b?.[1]?.() ?? 0 })"},
		{"object-rest-spread", "(function(){ const {a, ...r} = {a: 1}; return {...r} })"},
		{"optional-catch-binding", "(function(){ try {} catch {} })"},
		{"bigint", "(1n)"},
		{"numeric-separator", "(1_000)"},
		{"regexp-named-capture-groups", "(/(?<x>a)(?<=a)/su)"},
	}
	bad := map[string]bool{}
	for _, f := range unsupported {
		bad[f] = true
	}
	for _, tt := range tests {
		t.Run(tt.feature, func(t *testing.T) {
			_, err := goja.Compile("probe.js", tt.snippet, false)
			if bad[tt.feature] && err == nil {
				t.Errorf("goja now supports %s: drop it from unsupported", tt.feature)
			}
			if !bad[tt.feature] && err != nil {
				t.Errorf("goja cannot parse %s (%v): add it to unsupported", tt.feature, err)
			}
		})
	}
}

func TestFaultOfImportError(t *testing.T) {
	_, err := transpile("export {}")
	var se *syntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error = %v", err)
	}
	f := se.Fault()
	if !errors.Is(f, &fault.Error{Kind: fault.KindSyntax}) || !errors.Is(f, errImportExport) {
		t.Errorf("Fault() = %v does not classify as a syntax error wrapping errImportExport", f)
	}
	if !strings.Contains(se.Error(), "line 1, column 1") {
		t.Errorf("Error() = %q", se.Error())
	}
}
