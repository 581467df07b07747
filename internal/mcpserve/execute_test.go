package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/mcpserve"
)

// TestListTools: a client sees two tools; execute's description carries the
// script contract and the compact declarations of every tool.
func TestListTools(t *testing.T) {
	cs := connect(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t)}), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2 || res.Tools[0].Name != "execute" || res.Tools[1].Name != "search" {
		t.Fatalf("tools %+v", res.Tools)
	}
	exec, search := res.Tools[0], res.Tools[1]
	for _, want := range []string{"body of an async function", "Promise.all", "The 3 tools, declared in TypeScript",
		"declare const tools: {", "get_expenses(args: GetExpensesInput): Promise<GetExpensesOutput>;", "interface GetExpensesInput"} {
		if !strings.Contains(exec.Description, want) {
			t.Errorf("execute's description lacks %q:\n%s", want, exec.Description)
		}
	}
	// Compact: no error types or console (the contract states them).
	if strings.Contains(exec.Description, "interface ToolError") {
		t.Errorf("execute's description declares the error types:\n%s", exec.Description)
	}
	if !strings.Contains(search.Description, "3 tools") || search.Annotations == nil || !search.Annotations.ReadOnlyHint {
		t.Errorf("search %+v", search)
	}
	if cs.InitializeResult().Instructions == "" {
		t.Error("no instructions")
	}
}

// TestExecute runs programs through execute: results as text and
// structuredContent with stats in _meta, failures as isError with the
// model-facing message, bad arguments as isError saying what to change.
func TestExecute(t *testing.T) {
	cs := connect(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t), MaxCodeBytes: 4096}), nil)
	expenses, want := example(t)
	cases := []struct {
		name    string
		args    string
		result  string // exact text on success
		isError bool
		contain []string // in the text
		kind    string   // structuredContent error kind or code
	}{
		{name: "expense example", args: codeArgs(expenses), result: want},
		{name: "input", args: `{"code":"return input.n * 2","input":{"n":21}}`, result: "42"},
		{name: "null input", args: `{"code":"return input","input":null}`, result: "null"},
		{name: "typescript", args: `{"code":"const n: number = 40; return n + 2","language":"typescript"}`, result: "42"},
		{name: "python", args: `{"code":"n = 40\nreturn n + 2","language":"python"}`, result: "42"},
		{name: "javascript named", args: `{"code":"return 1","language":"javascript"}`, result: "1"},
		{name: "undefined is null", args: codeArgs("return"), result: "null"},
		{name: "script error", args: codeArgs("throw new Error('no budget data')"), isError: true,
			contain: []string{"SCRIPT_ERROR", "no budget data", "line 1"}, kind: "SCRIPT_ERROR"},
		{name: "syntax error", args: codeArgs("return {"), isError: true, contain: []string{"SYNTAX_ERROR"}, kind: "SYNTAX_ERROR"},
		{name: "uncaught tool error", args: codeArgs(`return await tools.get_expenses({member_id: "nobody", quarter: "Q3"})`), isError: true,
			contain: []string{"not_found", "get_expenses"}, kind: "SCRIPT_ERROR"},
		{name: "unknown tool", args: codeArgs(`return await tools.delete_everything({})`), isError: true,
			contain: []string{"unknown tool"}, kind: "SCRIPT_ERROR"},
		{name: "missing code", args: `{}`, isError: true, contain: []string{`"code" is missing`}, kind: "INVALID_ARGUMENT"},
		{name: "no arguments", args: `null`, isError: true, contain: []string{`"code" is missing`}, kind: "INVALID_ARGUMENT"},
		{name: "code not a string", args: `{"code":42}`, isError: true, contain: []string{`"code" must be a string`, "not a number"}, kind: "INVALID_ARGUMENT"},
		{name: "code an object", args: `{"code":{"src":"return 1"}}`, isError: true, contain: []string{"not an object"}, kind: "INVALID_ARGUMENT"},
		{name: "empty code", args: `{"code":"  "}`, isError: true, contain: []string{`"code" is empty`}, kind: "INVALID_ARGUMENT"},
		{name: "oversized code", args: codeArgs("return 1;" + strings.Repeat(" ", 4096)), isError: true,
			contain: []string{"4105 bytes, more than the 4096 allowed"}, kind: "INVALID_ARGUMENT"},
		{name: "unknown language", args: `{"code":"puts 1","language":"ruby"}`, isError: true,
			contain: []string{`language "ruby" is not supported`, `"javascript", "typescript" or "python"`}, kind: "INVALID_ARGUMENT"},
		{name: "language not a string", args: `{"code":"return 1","language":3}`, isError: true, contain: []string{`"language" must be`}, kind: "INVALID_ARGUMENT"},
		{name: "unknown argument", args: `{"source":"return 1"}`, isError: true,
			contain: []string{`unknown argument "source"`, "code, input and language"}, kind: "INVALID_ARGUMENT"},
		{name: "arguments an array", args: `["return 1"]`, isError: true, contain: []string{"must be a JSON object"}, kind: "INVALID_ARGUMENT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, "execute", tc.args)
			if res.IsError != tc.isError {
				t.Fatalf("isError %v: %s", res.IsError, text(res))
			}
			sc := structured(t, res)
			if !tc.isError {
				if text(res) != tc.result {
					t.Fatalf("text %s, want %s", text(res), tc.result)
				}
				var got, want any
				if err := json.Unmarshal(sc["result"], &got); err != nil {
					t.Fatalf("structuredContent %v", sc)
				}
				_ = json.Unmarshal([]byte(tc.result), &want)
				if g, _ := json.Marshal(got); !bytes.Equal(g, mustJSON(want)) {
					t.Fatalf("structured result %s, want %s", g, tc.result)
				}
				if res.Meta[mcpserve.MetaExecutionID] == "" || res.Meta[mcpserve.MetaStats] == nil {
					t.Fatalf("meta %v", res.Meta)
				}
				return
			}
			for _, w := range tc.contain {
				if !strings.Contains(text(res), w) {
					t.Errorf("text %q lacks %q", text(res), w)
				}
			}
			var e struct{ Kind, Code string }
			if err := json.Unmarshal(sc["error"], &e); err != nil || (e.Kind != tc.kind && e.Code != tc.kind) {
				t.Errorf("structured error %s, want %s", sc["error"], tc.kind)
			}
		})
	}

	// The stats of the expense example: 26 calls, 200 KB from the tools,
	// and the trace in _meta.
	res := call(t, cs, "execute", codeArgs(expenses))
	var st struct {
		ToolCalls       int   `json:"toolCalls"`
		ToolResultBytes int64 `json:"toolResultBytes"`
		OutputBytes     int64 `json:"outputBytes"`
	}
	raw, _ := json.Marshal(res.Meta[mcpserve.MetaStats])
	if err := json.Unmarshal(raw, &st); err != nil || st.ToolCalls != 26 || st.ToolResultBytes < 200_000 || st.OutputBytes != int64(len(want)) {
		t.Fatalf("stats %s", raw)
	}
	if tr, _ := res.Meta[mcpserve.MetaTrace].([]any); len(tr) != 26 {
		t.Fatalf("trace %v", res.Meta[mcpserve.MetaTrace])
	}
	// Console output stays out of the model's text, in _meta.
	res = call(t, cs, "execute", codeArgs(`console.log("hello", 1); return 2`))
	if text(res) != "2" || !strings.Contains(mustString(res.Meta[mcpserve.MetaLogs]), "hello 1") {
		t.Fatalf("logs: %s %v", text(res), res.Meta)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func mustString(v any) string { return string(mustJSON(v)) }

// TestLimit: a call the limiter refuses is isError and runs nothing.
func TestLimit(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	cs := connect(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t), Limit: func(context.Context) error {
		if refuse.Load() {
			return errTest("tenant t is over its rate of 1 requests/s: retry after 1s")
		}
		return nil
	}}), nil)
	for tool, args := range map[string]string{"execute": `{"code":"return 1"}`, "search": `{"query":"budget"}`} {
		res := call(t, cs, tool, args)
		if !res.IsError || !strings.Contains(text(res), "retry after 1s") {
			t.Fatalf("%s: %v %s", tool, res.IsError, text(res))
		}
	}
	refuse.Store(false)
	if res := call(t, cs, "execute", `{"code":"return 1"}`); res.IsError {
		t.Fatal(text(res))
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }

// TestUnknownToolName: calling a tool ptc does not serve is a JSON-RPC
// error; the session keeps serving.
func TestUnknownToolName(t *testing.T) {
	cs := connect(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t)}), nil)
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_expenses", Arguments: map[string]any{}}); err == nil {
		t.Fatal("no error")
	}
	if res := call(t, cs, "execute", `{"code":"return 1"}`); res.IsError || text(res) != "1" {
		t.Fatal(text(res))
	}
}
