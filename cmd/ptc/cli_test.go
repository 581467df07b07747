package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/testenv"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// runCLI runs the built ptc binary with stdin and returns its exit code
// and output.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(ptcBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return testenv.Run(t, cmd)
}

// ptcMain runs the built ptc binary with an empty stdin.
func ptcMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, "", args...)
}

func writeScript(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunExpenseExample(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "run", "../../examples/expenses.js")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, _ := os.ReadFile("../../examples/expenses.expected.json")
	var g, w any
	_ = json.Unmarshal([]byte(stdout), &g)
	_ = json.Unmarshal(want, &w)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("stdout %s", stdout)
	}
	if !strings.Contains(stderr, "26 tool calls") || !strings.Contains(stderr, "bytes from tools") {
		t.Fatalf("summary: %s", stderr)
	}
}

func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		name, src string
		args      []string
		code      int
		stderr    string
	}{
		{"ok", `return input.a + 1`, []string{"--input", `{"a": 1}`}, 0, "ok in"},
		{"input from stdin", `return input`, []string{"--input", "@-"}, 0, "ok in"},
		{"syntax", `return (`, nil, 11, "SYNTAX_ERROR at line 1"},
		{"script", "\nthrow new Error('x')", nil, 12, "SCRIPT_ERROR at line 2"},
		{"timeout", `for (;;) {}`, []string{"--timeout", "50ms"}, 13, "TIMEOUT"},
		{"cpu", `for (;;) {}`, []string{"--cpu-time", "50ms"}, 14, "CPU_LIMIT"},
		{"tool calls", `for (;;) await tools.get_budget_by_level({level: "mid"})`, []string{"--max-tool-calls", "3"}, 16, "TOOL_CALL_LIMIT"},
		{"output", `return "x".repeat(100)`, []string{"--max-output-bytes", "10"}, 17, "OUTPUT_LIMIT"},
		{"result schema", `return 1`, []string{"--result-schema", `{"type":"string"}`}, 18, "RESULT_SCHEMA_VIOLATION"},
		{"unknown allowed tool", `return 1`, []string{"--allow", "nope"}, 2, "unknown tool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeScript(t, "s.js", tc.src)
			code, _, stderr := runCLI(t, `{"b": 2}`, append([]string{"run", p}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tc.code, stderr, tc.stderr)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"run"}, {"run", "/does/not/exist.js"}, {"run", "a.js", "b.js"}, {"run", "--bogus", "a.js"}} {
		if code, _, _ := runCLI(t, "", args...); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
	}
}

// TestFlagMistakes: a misspelt flag or a bad value is one line on
// stderr, naming the flag meant, not the whole usage.
func TestFlagMistakes(t *testing.T) {
	p := writeScript(t, "s.js", "return 1")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"misspelt flag of run", []string{"run", p, "--inptu", "{}"}, "ptc run: unknown flag --inptu (did you mean --input?); ptc help lists every flag\n"},
		{"misspelt limit", []string{"run", p, "--timout", "1s"}, "ptc run: unknown flag --timout (did you mean --timeout?); ptc help lists every flag\n"},
		{"nothing near", []string{"run", p, "--frobnicate"}, "ptc run: unknown flag --frobnicate; ptc help lists every flag\n"},
		{"bad value", []string{"run", p, "--timeout", "soon"}, "ptc run: invalid value \"soon\" for flag -timeout: "},
		{"misspelt flag of tools", []string{"tools", "--qeury", "x"}, "ptc tools: unknown flag --qeury (did you mean --query?); ptc help lists every flag\n"},
		{"misspelt flag of resume", []string{"resume", "--aprove", "all"}, "ptc resume: unknown flag --aprove (did you mean --approve?); ptc help lists every flag\n"},
		{"misspelt flag of test", []string{"test", "--updte"}, "ptc test: unknown flag --updte (did you mean --update?); ptc help lists every flag\n"},
		{"misspelt flag of mcp", []string{"mcp", "--confg", "x.yaml"}, "ptc mcp: unknown flag --confg (did you mean --config?); ptc help lists every flag\n"},
		{"bad value of mcp", []string{"mcp", "--description-bytes", "many"}, "ptc mcp: invalid value \"many\" for flag -description-bytes: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", tt.args...)
			if code != 1 || !strings.HasPrefix(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want exit 1 and one line starting %q", code, stderr, tt.want)
			}
		})
	}
	code, stdout, _ := runCLI(t, "", "run", "-h")
	if code != 0 || !strings.Contains(stdout, "usage of ptc run") || !strings.Contains(stdout, "-max-tool-calls") {
		t.Fatalf("run -h: exit %d, stdout %q", code, stdout)
	}
}

func TestTools(t *testing.T) {
	code, stdout, _ := runCLI(t, "", "tools")
	if code != 0 || !regexp.MustCompile(`^TOOL +DESCRIPTION\n`).MatchString(stdout) || !strings.Contains(stdout, "\nget_expenses ") {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	code, stdout, _ = runCLI(t, "", "tools", "--typescript", "get_expenses")
	if code != 0 || !strings.Contains(stdout, "get_expenses(args: GetExpensesInput)") || strings.Contains(stdout, "get_team_members(") {
		t.Fatalf("typescript: exit %d: %s", code, stdout)
	}
	if code, _, _ = runCLI(t, "", "tools", "nope"); code != 2 {
		t.Fatalf("unknown name: exit %d", code)
	}
}

// TestToolsQueryScoreColumn checks that the relevance score of
// `ptc tools --query` sits under a SCORE header.
func TestToolsQueryScoreColumn(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "tools", "--query", "travel budget", "--limit", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 2 || !regexp.MustCompile(`^TOOL +SCORE +DESCRIPTION$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^get_budget_by_level +\d+\.\d\d +\S`).MatchString(lines[1]) {
		t.Fatalf("want a header and one scored row:\n%s", stdout)
	}
	// The score starts where its header does.
	if strings.Index(lines[0], "SCORE") != regexp.MustCompile(`\d+\.\d\d`).FindStringIndex(lines[1])[0] {
		t.Fatalf("the score is not under its header:\n%s", stdout)
	}
}

// TestJSONOutputIsProtoJSON checks that every --json output is a ptc.v1
// message in protobuf's JSON mapping, as grpcurl shows it: it parses as
// the message with unknown fields refused, and uses lowerCamelCase names,
// enum value names and durations as strings.
func TestJSONOutputIsProtoJSON(t *testing.T) {
	dir := t.TempDir()
	ok := writeScript(t, "ok.js", `console.log("hi"); const b = await tools.get_budget_by_level({level: "mid"}); return {b}`)
	fail := writeScript(t, "fail.js", "\nthrow new Error('boom')")
	tape := filepath.Join(dir, "ok.jsonl")
	if code, _, stderr := ptcMain(t, "run", ok, "--record", tape); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	cases := []struct {
		name string
		args []string
		code int
		msg  func() protoMessage
		keys []string
		not  []string
	}{
		{"run", []string{"run", ok, "--json"}, 0, newExecuteResponse,
			[]string{`"resultJson": "{\"b\":`, `"modelMessage":`, `"level": "log"`, `"toolCalls": 1`, `"argumentsJson":`, `"startedAfter": "`, `"effectiveLimits": {`, `"timeout": "30s"`},
			[]string{`"ModelMessage"`, `"Kind"`, `"ToolCalls"`}},
		{"run, failing script", []string{"run", fail, "--json"}, 12, newExecuteResponse,
			[]string{`"kind": "ERROR_KIND_SCRIPT_ERROR"`, `"line": 2`},
			[]string{`"Kind": 2`}},
		{"replay", []string{"run", "--replay", tape, "--json"}, 0, newExecuteResponse,
			[]string{`"resultJson":`, `"toolCalls": 1`}, nil},
		{"record", []string{"run", ok, "--record", filepath.Join(dir, "again.jsonl"), "--json"}, 0, newExecuteResponse,
			[]string{`"resultJson":`}, nil},
		{"tools", []string{"tools", "--json", "--query", "budget", "--typescript"}, 0, newListToolsResponse,
			[]string{`"inputSchemaJson":`, `"typescript":`, `"matches": [`, `"approxTokens":`}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := ptcMain(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if err := (protojson.UnmarshalOptions{}).Unmarshal([]byte(stdout), tc.msg()); err != nil {
				t.Fatalf("not a %T in protobuf's JSON mapping: %v\n%s", tc.msg(), err, stdout)
			}
			for _, k := range tc.keys {
				if !strings.Contains(stdout, k) {
					t.Errorf("output lacks %s:\n%s", k, stdout)
				}
			}
			for _, k := range tc.not {
				if strings.Contains(stdout, k) {
					t.Errorf("output has Go field %s:\n%s", k, stdout)
				}
			}
			if !regexp.MustCompile(`"duration": "\d+(\.\d+)?s"`).MatchString(stdout) && tc.msg().ProtoReflect().Descriptor().Name() == "ExecuteResponse" {
				t.Errorf("durations are not strings:\n%s", stdout)
			}
		})
	}
}

type protoMessage = proto.Message

func newExecuteResponse() protoMessage   { return &ptcv1.ExecuteResponse{} }
func newListToolsResponse() protoMessage { return &ptcv1.ListToolsResponse{} }

// TestInputErrors checks that a malformed --input or --result-schema is
// refused by the CLI, naming the flag and where the JSON breaks, before
// anything runs.
func TestInputErrors(t *testing.T) {
	dir := t.TempDir()
	p := writeScript(t, "s.js", `return input`)
	file := filepath.Join(dir, "in.json")
	if err := os.WriteFile(file, []byte("{\n  \"a\": 1,\n  \"b\": tru\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"unclosed object", []string{"--input", "{"}, "", "ptc: --input: not valid JSON at line 1, column 2: unexpected end of JSON input\n"},
		{"trailing comma", []string{"--input", `{"a": 1,}`}, "", "ptc: --input: not valid JSON at line 1, column 9: invalid character '}' looking for beginning of object key string\n"},
		{"two values", []string{"--input", `1 2`}, "", "ptc: --input: not valid JSON at line 1, column 3: invalid character '2' after top-level value\n"},
		{"bare word", []string{"--input", `hello`}, "", "ptc: --input: not valid JSON at line 1, column 1: invalid character 'h' looking for beginning of value\n"},
		{"cut-off literal", []string{"--input", `nul`}, "", "ptc: --input: not valid JSON at line 1, column 4: unexpected end of JSON input\n"},
		{"file, line 3", []string{"--input", "@" + file}, "", "ptc: --input @" + file + ": not valid JSON at line 3, column 11: invalid character '\\n' in literal true (expecting 'e')\n"},
		{"empty file", []string{"--input", "@" + empty}, "", "ptc: --input @" + empty + ": is empty: give a JSON value such as {} or null\n"},
		{"stdin", []string{"--input", "@-"}, "[1, 2", "ptc: --input @-: not valid JSON at line 1, column 6: unexpected end of JSON input\n"},
		{"result schema", []string{"--result-schema", `{"type": string}`}, "", "ptc: --result-schema: not valid JSON at line 1, column 10: invalid character 's' looking for beginning of value\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.stdin, append([]string{"run", p}, tc.args...)...)
			if code != exitUsage || stderr != tc.want || stdout != "" {
				t.Fatalf("exit %d (want 1)\nstderr %q\nwant   %q\nstdout %q", code, stderr, tc.want, stdout)
			}
		})
	}
}

// TestScriptExtensions checks that a file ptc cannot tell the language of
// is refused with the extensions it runs, and that --language runs it.
func TestScriptExtensions(t *testing.T) {
	rb := writeScript(t, "script.rb", `return 1`)
	bare := writeScript(t, "script", `return 1`)
	list := ".js, .mjs, .cjs (JavaScript), .ts, .mts, .cts (TypeScript), .wasm (WebAssembly) and .py (Python); to run it anyway, name its language with --language javascript, typescript, wasm or python\n"
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"unknown extension", []string{"run", rb}, 1, "", "ptc: " + rb + " has the extension .rb, which ptc does not run: ptc runs " + list},
		{"no extension", []string{"run", bare}, 1, "", "ptc: " + bare + " has no extension: ptc runs " + list},
		{"--language", []string{"run", rb, "--language", "javascript"}, 0, "1\n", ""},
		{"--language typescript", []string{"run", bare, "--language", "typescript"}, 0, "1\n", ""},
		{"unknown --language", []string{"run", rb, "--language", "ruby"}, 1, "", "ptc: --language: \"ruby\" is not a language ptc runs: use javascript, typescript, wasm or python\n"},
		{".mjs", []string{"run", writeScript(t, "s.mjs", `return 2`)}, 0, "2\n", ""},
		{".cts", []string{"run", writeScript(t, "s.cts", `const n: number = 3; return n`)}, 0, "3\n", ""},
		{".py", []string{"run", writeScript(t, "s.py", "n = await tools.get_budget_by_level(level='senior')\nreturn n['level']")}, 0, "\"senior\"\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", tc.args...)
			if tc.code == 0 {
				stderr = "" // the summary line
			}
			if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q\nwant   %q", code, tc.code, stdout, tc.stdout, stderr, tc.stderr)
			}
		})
	}
}

// TestPluralForms checks the counts the CLI prints: one tool call, one
// byte, one tool; several of each.
func TestPluralForms(t *testing.T) {
	one := writeScript(t, "one.js", `await tools.get_budget_by_level({level: "mid"}); return 1`)
	none := writeScript(t, "none.js", `return 1`)
	tape := filepath.Join(t.TempDir(), "one.jsonl")
	cases := []struct {
		name string
		args []string
		want *regexp.Regexp
	}{
		{"one call, one byte", []string{"run", one}, regexp.MustCompile(`· 1 tool call · \d+ bytes from tools → 1 byte returned \(\d+× less\)\n`)},
		{"no call", []string{"run", none}, regexp.MustCompile(`· 0 tool calls · 0 bytes from tools → 1 byte returned\n`)},
		{"many calls", []string{"run", "../../examples/expenses.js"}, regexp.MustCompile(`· 26 tool calls · 200986 bytes from tools → 571 bytes returned`)},
		{"recorded one", []string{"run", one, "--record", tape}, regexp.MustCompile(`ptc: recorded 1 tool call \(seed \d+\) to `)},
		{"replayed one", []string{"run", "--replay", tape}, regexp.MustCompile(`ptc: replay matches the recording \(1 tool call\)\n`)},
		{"one tool", []string{"tools", "--typescript", "get_expenses"}, regexp.MustCompile(`^ptc: 1 tool, about \d+ tokens with the prompt\n$`)},
		{"many tools", []string{"tools", "--typescript"}, regexp.MustCompile(`^ptc: 3 tools, about \d+ tokens with the prompt\n$`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := ptcMain(t, tc.args...)
			if code != 0 || !tc.want.MatchString(stderr) {
				t.Fatalf("exit %d, stderr %q, want %s", code, stderr, tc.want)
			}
		})
	}
}

func TestLanguageOf(t *testing.T) {
	cases := []struct {
		path    string
		content string
		flag    string
		want    string
	}{
		{"a.js", "return 1", "", "javascript"},
		{"a.MJS", "return 1", "", "javascript"},
		{"a.ts", "return 1", "", "typescript"},
		{"a.mts", "return 1", "", "typescript"},
		{"a.wasm", "\x00asm\x01\x00\x00\x00", "", "wasm"},
		{"guest.bin", "\x00asm\x01\x00\x00\x00", "", "wasm"},
		{"script", "return 1", "javascript", "javascript"},
		{"a.js", "return 1", "typescript", "typescript"},
	}
	for _, tc := range cases {
		got, err := languageOf(tc.path, []byte(tc.content), tc.flag)
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: %s, %v, want %s", tc.path, got, err, tc.want)
		}
	}
	// A file that is not a module is rejected as a request error.
	p := writeScript(t, "bad.wasm", "\x00asm garbage")
	if code, _, stderr := runCLI(t, "", "run", p); code != 2 || !strings.Contains(stderr, "wasm_module") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestScriptErrorsForTheModel checks, in JavaScript and TypeScript, the
// errors a first script often meets, as stderr and the model message
// (--json) give them: a script cut short is reported at its last line,
// never past it nor with the wrapper's tokens; an uncaught tool error at
// the line of the call; a property of the missing input as a property of
// null.
func TestScriptErrorsForTheModel(t *testing.T) {
	cases := []struct {
		name, src string
		stderr    string // the first line of stderr, after "ptc: "
		model     string // a part of the model message
	}{
		{"cut short", "const a = 1;\nreturn a +",
			"SYNTAX_ERROR at line 2:10: SyntaxError: unexpected end of script: close every '{', '(', '[', string, template literal and comment",
			"at line 2, column 10: SyntaxError: unexpected end of script"},
		{"unclosed if", "if (input) {\n  return 1",
			"SYNTAX_ERROR at line 2:10: SyntaxError: unexpected end of script: the '{' opened at line 1, column 12 is not closed",
			"at line 2, column 10: SyntaxError: unexpected end of script: the '{' opened at line 1, column 12 is not closed"},
		{"tool error", "const team = await tools.get_team_members({department: \"sales\"});\nconst e = await tools.get_expenses({member_id: \"nope\", quarter: \"Q3\"});\nreturn e",
			"SCRIPT_ERROR at line 2:35: uncaught ToolError from tool get_expenses (code not_found): no team member has id \"nope\": use an id returned by get_team_members",
			"SCRIPT_ERROR at line 2, column 35: uncaught ToolError from tool get_expenses"},
		{"null input", "const dept = input.department;\nreturn dept",
			"SCRIPT_ERROR at line 1:20: uncaught TypeError: Cannot read property 'department' of null (input is null: the request has no input)",
			"at line 1, column 20: uncaught TypeError: Cannot read property 'department' of null (input is null: the request has no input)"},
	}
	for _, tc := range cases {
		for _, ext := range []string{".js", ".ts"} {
			t.Run(tc.name+ext, func(t *testing.T) {
				p := writeScript(t, "s"+ext, tc.src)
				_, _, stderr := ptcMain(t, "run", p)
				first, _, _ := strings.Cut(stderr, "\n")
				want := "ptc: " + tc.stderr
				model := tc.model
				if ext == ".ts" {
					// The same messages and positions; only a tool call's
					// column differs ("await" is lowered).
					if tc.name == "tool error" {
						want = strings.Replace(want, "2:35", "2:23", 1)
						model = strings.Replace(model, "column 35", "column 23", 1)
					}
				}
				if first != want {
					t.Fatalf("stderr\n%s\nwant\n%s", first, want)
				}
				_, stdout, _ := ptcMain(t, "run", p, "--json")
				var res ptcv1.ExecuteResponse
				if err := protojson.Unmarshal([]byte(stdout), &res); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(res.GetModelMessage(), model) {
					t.Fatalf("model message %q lacks %q", res.GetModelMessage(), model)
				}
				for _, bad := range []string{"Unexpected token }", "Unexpected token )", "of undefined", "line 0"} {
					if strings.Contains(stderr+res.GetModelMessage(), bad) {
						t.Fatalf("%q in %s / %s", bad, stderr, res.GetModelMessage())
					}
				}
			})
		}
	}
}

// TestRunIsolation: `ptc run` runs the script in a worker process, which
// a Go stack overflow inside the engine ends (the execution's
// SCRIPT_ERROR, exit 12) instead of ptc itself; --inprocess runs it in
// ptc's own process.
func TestRunIsolation(t *testing.T) {
	overflow := writeScript(t, "overflow.js", `const o = {}; o[Symbol.toPrimitive] = o; return String(o)`)
	code, stdout, stderr := ptcMain(t, "run", overflow)
	if code != 12 || stdout != "" || !strings.Contains(stderr, "SCRIPT_ERROR") || !strings.Contains(stderr, "deeper than the engine's stack") {
		t.Fatalf("exit %d, stdout %q, stderr %s; want exit 12 and the stack overflow's SCRIPT_ERROR", code, stdout, stderr)
	}
	if strings.Contains(stderr, "goroutine") {
		t.Errorf("the worker's crash output reached ptc's stderr: %s", stderr)
	}
	ok := writeScript(t, "ok.js", `return await tools.get_budget_by_level({level: "mid"})`)
	for _, args := range [][]string{{"run", ok}, {"run", "--inprocess", ok}} {
		code, stdout, stderr := ptcMain(t, args...)
		if code != 0 || !strings.Contains(stdout, "travel") {
			t.Errorf("%v: exit %d, stdout %s, stderr %s", args, code, stdout, stderr)
		}
	}
}
