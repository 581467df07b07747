package ptc_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/testenv"
	"github.com/ptcrun/ptc/tools"
)

// TestMain doubles as the worker entry point: runners with worker-process
// isolation start the test binary itself as their workers.
func TestMain(m *testing.M) {
	ptc.RunWorker()
	goleak.VerifyTestMain(testenv.SkipReport(m))
}

func jsonEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("result is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("expected is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("result\n%s\nwant\n%s", got, want)
	}
}

// TestExpenseExample runs examples/expenses.js against the demo tools and
// compares with the committed expected result.
func TestExpenseExample(t *testing.T) {
	src, err := os.ReadFile("examples/expenses.js")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("examples/expenses.expected.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := newDemoRunner(t).Execute(context.Background(), ptc.Request{Source: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	jsonEqual(t, res.Result, want)
	if res.Stats.ToolCalls != 26 || len(res.Trace) != 26 {
		t.Fatalf("tool calls %d, trace %d", res.Stats.ToolCalls, len(res.Trace))
	}
	if res.Stats.ToolResultBytes < 150_000 || res.Stats.OutputBytes > 1000 || res.Stats.OutputBytes != int64(len(res.Result)) {
		t.Fatalf("bytes in %d out %d", res.Stats.ToolResultBytes, res.Stats.OutputBytes)
	}
	if res.ModelMessage != string(res.Result) {
		t.Fatalf("model message %q", res.ModelMessage)
	}
	if !strings.HasPrefix(res.ExecutionID, "ex_") {
		t.Fatalf("execution id %q", res.ExecutionID)
	}
	for i, r := range res.Trace {
		if r.Seq != int32(i+1) || !r.OK {
			t.Fatalf("trace[%d] = %+v", i, r)
		}
	}
	if res.Trace[0].Tool != "get_team_members" || string(res.Trace[0].Arguments) != `{"department":"engineering"}` {
		t.Fatalf("first call %+v", res.Trace[0])
	}
}

func TestRequestErrors(t *testing.T) {
	r := newDemoRunner(t)
	cases := []struct {
		name string
		req  ptc.Request
		code ptc.Code
		msg  string
	}{
		{"empty source", ptc.Request{}, ptc.InvalidArgument, "source is empty"},
		{"unknown language", ptc.Request{Language: 9, Source: "return 1"}, ptc.InvalidArgument, "unknown language"},
		{"bad input", ptc.Request{Source: "return 1", Input: json.RawMessage(`{`)}, ptc.InvalidArgument, "input_json"},
		{"bad result schema", ptc.Request{Source: "return 1", ResultSchema: json.RawMessage(`{"type": 5}`)}, ptc.InvalidArgument, "result_schema_json"},
		{"external ref", ptc.Request{Source: "return 1", ResultSchema: json.RawMessage(`{"$ref": "http://example.com/s.json"}`)}, ptc.InvalidArgument, "result_schema_json"},
		{"unknown allowed tool", ptc.Request{Source: "return 1", AllowedTools: []string{"nope"}}, ptc.InvalidArgument, `unknown tool "nope"`},
		{"negative limit", ptc.Request{Source: "return 1", Limits: ptc.Limits{Timeout: -time.Second}}, ptc.InvalidArgument, "negative"},
		{"bad execution id", ptc.Request{Source: "return 1", ExecutionID: "a b"}, ptc.InvalidArgument, "execution_id"},
		{"source too large", ptc.Request{Source: strings.Repeat("x", 1<<20+1)}, ptc.InvalidArgument, "more than"},
		{"input too large", ptc.Request{Source: "return 1", Input: json.RawMessage(`"` + strings.Repeat("x", 8<<20) + `"`)}, ptc.InvalidArgument, "more than"},
		{"client tool collides", ptc.Request{Source: "return 1", ClientTools: []tools.Tool{{Definition: tools.Definition{Name: "get_expenses"},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return nil, nil }}}}, ptc.InvalidArgument, "collides"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Execute(context.Background(), tc.req)
			if ptc.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestWithLanguages(t *testing.T) {
	r, err := ptc.NewRunner(ptc.WithLanguages(ptc.LanguageJavaScript))
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []ptc.Language{ptc.LanguageTypeScript, ptc.LanguageWASM} {
		_, err := r.Execute(context.Background(), ptc.Request{Language: lang, Source: "return 1", Module: []byte{0}})
		if ptc.CodeOf(err) != ptc.Unimplemented {
			t.Fatalf("%v: %v", lang, err)
		}
	}
	if res, err := r.Execute(context.Background(), ptc.Request{Source: "return 1"}); err != nil || string(res.Result) != "1" {
		t.Fatal(err, res)
	}
	if _, err := ptc.NewRunner(ptc.WithLanguages(7)); err == nil {
		t.Fatal("unknown language accepted")
	}
}

func TestLimitsClampedAndReported(t *testing.T) {
	r, err := ptc.NewRunner(
		ptc.WithDefaults(ptc.Limits{Timeout: time.Second, MaxToolCalls: 10}),
		ptc.WithCeilings(ptc.Limits{Timeout: 2 * time.Second, MaxToolCalls: 20, MaxOutputBytes: 100}),
	)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), ptc.Request{Source: "return 1", Limits: ptc.Limits{Timeout: time.Hour, MaxToolCalls: 5}})
	if err != nil {
		t.Fatal(err)
	}
	l := res.EffectiveLimits
	if l.Timeout != 2*time.Second || l.MaxToolCalls != 5 || l.MaxOutputBytes != 100 {
		t.Fatalf("effective limits %+v", l)
	}
	if _, err := ptc.NewRunner(ptc.WithDefaults(ptc.Limits{Timeout: time.Hour}), ptc.WithCeilings(ptc.Limits{Timeout: time.Second})); err == nil {
		t.Fatal("a default above its ceiling was accepted")
	}
}

func TestResultSchema(t *testing.T) {
	r := newDemoRunner(t)
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	res, err := r.Execute(context.Background(), ptc.Request{Source: `return {n: 1}`, ResultSchema: schema})
	succeeded(t, res, err)
	res, err = r.Execute(context.Background(), ptc.Request{Source: `return {n: "one"}`, ResultSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != ptc.KindResultSchema || !strings.Contains(res.Error.Message, "/n") {
		t.Fatalf("error %v", res.Error)
	}
	if res.Result != nil {
		t.Fatalf("result kept on failure: %s", res.Result)
	}
	if !strings.Contains(res.ModelMessage, "RESULT_SCHEMA_VIOLATION") {
		t.Fatalf("model message %q", res.ModelMessage)
	}
}

func TestAllowedTools(t *testing.T) {
	r := newDemoRunner(t)
	res, err := r.Execute(context.Background(), ptc.Request{
		Source:       `try { await tools.get_expenses({member_id: "eng-01", quarter: "Q1"}) } catch (e) { return e.code }`,
		AllowedTools: []string{"get_team_members"},
	})
	succeeded(t, res, err)
	if string(res.Result) != `"unknown_tool"` {
		t.Fatalf("result %s", res.Result)
	}
}

// TestModelMessage checks that every failure gives one short paragraph
// naming the kind and the fix, without Go internals.
func TestModelMessage(t *testing.T) {
	r := newDemoRunner(t)
	cases := []struct {
		name, src string
		lim       ptc.Limits
		kind      ptc.ErrorKind
		want      []string
	}{
		{"syntax", "return (", ptc.Limits{}, ptc.KindSyntax, []string{"SYNTAX_ERROR", "line 1", "async function"}},
		{"script", "\nnull.x", ptc.Limits{}, ptc.KindScript, []string{"SCRIPT_ERROR", "line 2", "TypeError"}},
		{"tool", `await tools.get_expenses({member_id: "nobody", quarter: "Q1"})`, ptc.Limits{}, ptc.KindScript, []string{"get_expenses", "not_found", "try/catch"}},
		{"timeout", "for(;;){}", ptc.Limits{Timeout: 20 * time.Millisecond}, ptc.KindTimeout, []string{"TIMEOUT", "Promise.all"}},
		{"calls", `for (;;) await tools.get_budget_by_level({level: "mid"})`, ptc.Limits{MaxToolCalls: 2}, ptc.KindToolCallLimit, []string{"TOOL_CALL_LIMIT", "At most 2"}},
		{"output", `return "x".repeat(100)`, ptc.Limits{MaxOutputBytes: 10}, ptc.KindOutputLimit, []string{"OUTPUT_LIMIT", "at most 10 bytes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Execute(context.Background(), ptc.Request{Source: tc.src, Limits: tc.lim})
			if err != nil {
				t.Fatal(err)
			}
			if res.Error == nil || res.Error.Kind != tc.kind {
				t.Fatalf("error %v", res.Error)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.ModelMessage, w) {
					t.Errorf("model message %q lacks %q", res.ModelMessage, w)
				}
			}
			for _, bad := range []string{"goroutine", ".go:", "/work/", "panic"} {
				if strings.Contains(res.ModelMessage, bad) {
					t.Errorf("model message %q contains %q", res.ModelMessage, bad)
				}
			}
			if strings.Count(res.ModelMessage, "\n") > 0 {
				t.Errorf("model message is not one paragraph: %q", res.ModelMessage)
			}
		})
	}
}

// TestCancelled: a caller's cancellation ends the execution with CANCELLED.
func TestCancelled(t *testing.T) {
	r := newDemoRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := r.Execute(ctx, ptc.Request{Source: `for (;;) {}`})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != ptc.KindCancelled {
		t.Fatalf("error %v", res.Error)
	}
}

func TestIncludeToolResults(t *testing.T) {
	r := newDemoRunner(t)
	res, err := r.Execute(context.Background(), ptc.Request{Source: `return (await tools.get_budget_by_level({level: "mid"})).travel_limit`, IncludeToolResults: true})
	succeeded(t, res, err)
	if len(res.Trace) != 1 || !strings.Contains(string(res.Trace[0].Result), `"travel_limit"`) {
		t.Fatalf("trace %+v", res.Trace)
	}
}

func TestDeterministic(t *testing.T) {
	r := newDemoRunner(t)
	src := `return [Math.random(), Math.random(), Date.now(), Date.now(), new Date().toISOString()]`
	run := func(req ptc.Request) string {
		t.Helper()
		req.Source = src
		res, err := r.Execute(context.Background(), req)
		succeeded(t, res, err)
		return string(res.Result)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := run(ptc.Request{Deterministic: true, Seed: 42, ClockStart: start})
	b := run(ptc.Request{Deterministic: true, Seed: 42, ClockStart: start})
	c := run(ptc.Request{Deterministic: true, Seed: 43, ClockStart: start})
	if a != b {
		t.Fatalf("same seed and clock differ:\n%s\n%s", a, b)
	}
	if a == c {
		t.Fatal("different seeds gave the same sequence")
	}
	var vals []any
	_ = json.Unmarshal([]byte(a), &vals)
	if vals[2].(float64) != float64(start.UnixMilli()) || vals[3].(float64) != float64(start.UnixMilli()+1) || vals[4] != "2026-01-02T03:04:05.002Z" {
		t.Fatalf("virtual clock: %s", a)
	}
	// Without a seed, the seed derives from the execution id.
	d := run(ptc.Request{Deterministic: true, ExecutionID: "ex-1"})
	e := run(ptc.Request{Deterministic: true, ExecutionID: "ex-1"})
	f := run(ptc.Request{Deterministic: true, ExecutionID: "ex-2"})
	if d != e || d == f {
		t.Fatalf("id-derived seeds: %s %s %s", d, e, f)
	}
	// Off by default: real time.
	if g := run(ptc.Request{}); strings.Contains(g, "1970-01-01") {
		t.Fatalf("clock virtual without the flag: %s", g)
	}
}

// TestTypeScriptExpenseExample: the TypeScript version of the example
// gives the same result as the JavaScript one.
func TestTypeScriptExpenseExample(t *testing.T) {
	r := newDemoRunner(t)
	run := func(lang ptc.Language, file string) *ptc.Result {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Execute(context.Background(), ptc.Request{Language: lang, Source: string(src)})
		succeeded(t, res, err)
		return res
	}
	tsRes := run(ptc.LanguageTypeScript, "examples/expenses.ts")
	jsRes := run(ptc.LanguageJavaScript, "examples/expenses.js")
	jsonEqual(t, tsRes.Result, jsRes.Result)
	if len(tsRes.Trace) != len(jsRes.Trace) {
		t.Fatalf("trace lengths %d vs %d", len(tsRes.Trace), len(jsRes.Trace))
	}
}

func TestTypeScriptErrorPositions(t *testing.T) {
	r := newDemoRunner(t)
	cases := []struct {
		name, src string
		kind      ptc.ErrorKind
		line      int
		msg       string
	}{
		{"syntax", "interface A { x: number }\nconst a: A = {x: 1};\nconst b = ;\n", ptc.KindSyntax, 3, ""},
		{"runtime throw", "type T = {n: number};\nconst t: T = {n: 1};\n\nthrow new Error(`bad ${t.n}`);", ptc.KindScript, 4, "bad 1"},
		{"import", "import fs from 'fs';\nreturn 1", ptc.KindSyntax, 1, "import"},
		{"after await", "const b = await tools.get_budget_by_level({level: \"mid\"});\nconst x: any = null;\nreturn x.y;", ptc.KindScript, 3, "TypeError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Execute(context.Background(), ptc.Request{Language: ptc.LanguageTypeScript, Source: tc.src})
			if err != nil {
				t.Fatal(err)
			}
			if res.Error == nil || res.Error.Kind != tc.kind || res.Error.Line != tc.line || !strings.Contains(res.Error.Message, tc.msg) {
				t.Fatalf("error %+v", res.Error)
			}
			if res.Error.Stack != "" && strings.Contains(res.Error.Stack, "script.ts.js") {
				t.Fatalf("stack not mapped: %s", res.Error.Stack)
			}
		})
	}
}

func TestNoServerTools(t *testing.T) {
	r := newDemoRunner(t)
	res, err := r.Execute(context.Background(), ptc.Request{NoServerTools: true, AllowedTools: []string{"get_expenses"},
		Source: `try { await tools.get_expenses({member_id: "eng-01", quarter: "Q1"}) } catch (e) { return e.code }`})
	if succeeded(t, res, err); string(res.Result) != `"unknown_tool"` {
		t.Fatal(res)
	}
}

func TestSizeAndStackOptions(t *testing.T) {
	r, err := ptc.NewRunner(ptc.WithMaxSourceBytes(20), ptc.WithMaxInputBytes(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ptc.Request{Source: "return 'more than twenty bytes'"}); ptc.CodeOf(err) != ptc.InvalidArgument {
		t.Fatalf("source over the bound: %v", err)
	}
	if _, err := r.Execute(context.Background(), ptc.Request{Source: "return input", Input: json.RawMessage(`"0123456789"`)}); ptc.CodeOf(err) != ptc.InvalidArgument {
		t.Fatalf("input over the bound: %v", err)
	}
	if res, err := r.Execute(context.Background(), ptc.Request{Source: "return input", Input: json.RawMessage(`1`)}); err != nil || string(res.Result) != "1" {
		t.Fatal(err, res)
	}
}

// TestLogFloodsAreCapped: empty console entries are not free — a flood of
// them ends at the log cap with the logs marked truncated, in-process and
// in worker processes alike.
func TestLogFloodsAreCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	for _, iso := range []ptc.Isolation{{}, {WorkerProcesses: true, Idle: -1, Max: 1}} {
		r, err := ptc.NewRunner(ptc.WithIsolation(iso))
		if err != nil {
			t.Fatal(err)
		}
		lim := ptc.Limits{MaxLogBytes: 4 << 10}
		res, err := r.Execute(context.Background(), ptc.Request{Source: `for (let i = 0; i < 200000; i++) console.log(""); return 1`, Limits: lim})
		succeeded(t, res, err)
		if max := int(lim.MaxLogBytes / 16); len(res.Logs) > max || !res.LogsTruncated || len(res.Logs) == 0 {
			t.Errorf("workers=%v: %d entries (at most %d), truncated %v", iso.WorkerProcesses, len(res.Logs), max, res.LogsTruncated)
		}
		res, err = r.Execute(context.Background(), ptc.Request{Source: `for (let i = 0; i < 100; i++) console.log(i); return 1`,
			Limits: ptc.Limits{MaxLogEntries: 5}})
		succeeded(t, res, err)
		if len(res.Logs) != 5 || res.Logs[4].Message != "4" || !res.LogsTruncated || res.EffectiveLimits.MaxLogEntries != 5 {
			t.Errorf("workers=%v: max_log_entries 5 kept %d entries, truncated %v", iso.WorkerProcesses, len(res.Logs), res.LogsTruncated)
		}
		_ = r.Close()
	}
}

// TestBreachesReportLimitAndObserved: every limit breach says which limit
// applied and what was observed, in the limit's unit.
func TestBreachesReportLimitAndObserved(t *testing.T) {
	r := newDemoRunner(t)
	defer r.Close()
	cases := []struct {
		name  string
		src   string
		lim   ptc.Limits
		kind  ptc.ErrorKind
		limit int64
	}{
		{"timeout", `for (;;) {}`, ptc.Limits{Timeout: 200 * time.Millisecond, CPUTime: time.Minute}, ptc.KindTimeout, int64(200 * time.Millisecond)},
		{"cpu", `for (;;) {}`, ptc.Limits{CPUTime: 100 * time.Millisecond}, ptc.KindCPULimit, int64(100 * time.Millisecond)},
		{"output", `return "x".repeat(100)`, ptc.Limits{MaxOutputBytes: 50}, ptc.KindOutputLimit, 50},
		{"tool calls", `for (;;) await tools.get_budget_by_level({level: "mid"})`, ptc.Limits{MaxToolCalls: 3}, ptc.KindToolCallLimit, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Execute(context.Background(), ptc.Request{Source: tc.src, Limits: tc.lim})
			if err != nil {
				t.Fatal(err)
			}
			e := res.Error
			if e == nil || e.Kind != tc.kind || e.Limit != tc.limit || e.Observed < e.Limit {
				t.Fatalf("error %+v, want %s with limit %d", e, tc.kind, tc.limit)
			}
		})
	}
}

// succeeded fails tb unless Execute returned a result with no error,
// naming what it got instead (res is nil when err is not).
func succeeded(tb testing.TB, res *ptc.Result, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	if res.Error != nil {
		tb.Fatal(res.Error)
	}
}
