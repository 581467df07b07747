package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
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
		{"rejected", `return 1`, []string{"--input", "{"}, 2, "input_json"},
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

func TestToolsAndJSON(t *testing.T) {
	code, stdout, _ := runCLI(t, "", "tools")
	if code != 0 || !strings.Contains(stdout, "get_expenses") {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	code, stdout, _ = runCLI(t, "", "tools", "--query", "travel budget", "--limit", "1")
	if code != 0 || !strings.HasPrefix(stdout, "get_budget_by_level\t") || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("query: exit %d: %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, "", "tools", "--typescript", "get_expenses")
	if code != 0 || !strings.Contains(stdout, "get_expenses(args: GetExpensesInput)") || strings.Contains(stdout, "get_team_members(") {
		t.Fatalf("typescript: exit %d: %s", code, stdout)
	}
	if code, _, _ = runCLI(t, "", "tools", "nope"); code != 2 {
		t.Fatalf("unknown name: exit %d", code)
	}
	p := writeScript(t, "s.js", `console.log("hi"); return 1`)
	code, stdout, _ = runCLI(t, "", "run", p, "--json")
	if code != 0 || !strings.Contains(stdout, `"ModelMessage": "1"`) || !strings.Contains(stdout, `"hi"`) {
		t.Fatalf("exit %d: %s", code, stdout)
	}
}

func TestLanguageOf(t *testing.T) {
	cases := []struct {
		path    string
		content string
		want    string
	}{
		{"a.js", "return 1", "javascript"},
		{"a.ts", "return 1", "typescript"},
		{"a.wasm", "\x00asm\x01\x00\x00\x00", "wasm"},
		{"guest.bin", "\x00asm\x01\x00\x00\x00", "wasm"},
		{"script", "return 1", "javascript"},
	}
	for _, tc := range cases {
		if got := languageOf(tc.path, []byte(tc.content)).String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.path, got, tc.want)
		}
	}
	// A file that is not a module is rejected as a request error.
	p := writeScript(t, "bad.wasm", "\x00asm garbage")
	if code, _, stderr := runCLI(t, "", "run", p); code != 2 || !strings.Contains(stderr, "wasm_module") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
