package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// parityCase is a script whose result, error, logs and trace must be the
// same whichever way it runs.
type parityCase struct {
	name   string
	src    string
	limits func(*limits.Limits)
	// result is the expected JSON result; empty when kind is set.
	result string
	kind   fault.Kind
	// line is the expected error line, 0 to skip the check.
	line int
	// kindOnly compares only the error kind (for messages that name a
	// measured quantity).
	kindOnly bool
}

var parityCases = []parityCase{
	{name: "input", src: `return input.n * 2`, result: `6`},
	{name: "undefined result", src: `let x = 1`, result: `null`},
	{name: "sequential tool calls", src: `
const a = await tools.math.add({a: 1, b: 2});
const b = await tools.math.add({a: a.sum, b: 10});
return b.sum;`, result: `13`},
	{name: "parallel tool calls", src: `
const rs = await Promise.all([1, 2, 3, 4].map(i => tools.math.add({a: i, b: i})));
return rs.map(r => r.sum);`, result: `[2,4,6,8]`},
	{name: "nested namespace and echo", src: `return await tools.echo({x: [1, "two", null]})`, result: `{"x":[1,"two",null]}`},
	{name: "argument error caught", src: `
try { await tools.math.add({a: "one"}); } catch (e) { return [e.name, e.code, e.tool, e.errors.length > 0]; }`,
		result: `["ToolArgumentError","invalid_arguments","math.add",true]`},
	{name: "tool error caught", src: `
try { await tools.fail({}); } catch (e) { return {name: e.name, code: e.code, message: e.message}; }`,
		result: `{"name":"ToolError","code":"not_found","message":"no such record"}`},
	{name: "tool error uncaught", src: "\nawait tools.fail({id: 1});", kind: fault.KindScript},
	{name: "output schema violation", src: `try { await tools.bad({}) } catch (e) { return e.code }`, result: `"invalid_output"`},
	{name: "discovery", src: `
const hits = await tools.$search("adds numbers", 2);
const d = await tools.$describe("math.add");
let missing; try { await tools.$describe("nope") } catch (e) { missing = [e.name, e.code] }
return [typeof tools.$search, hits.map((h) => h.name), d.name, d.typescript.length > 0, missing, Object.keys(tools)];`,
		result: `["function",["math.add"],"math.add",true,["ToolError","unknown_tool"],["bad","block","echo","fail","math"]]`},
	{name: "unknown tool", src: `try { await tools.nope({}) } catch (e) { return [e.code, e.message] }`,
		result: `["unknown_tool","unknown tool \"nope\"; available tools: bad, block, echo, fail, math.add"]`},
	{name: "tool call limit", src: `for (let i = 0; i < 5; i++) await tools.echo({i});`,
		limits: func(l *limits.Limits) { l.MaxToolCalls = 2 }, kind: fault.KindToolCallLimit},
	{name: "tool call limit caught", src: `
let n = 0;
for (let i = 0; i < 5; i++) { try { await tools.echo({i}); n++; } catch (e) { if (e.code !== "tool_call_limit") throw e; } }
return n;`, limits: func(l *limits.Limits) { l.MaxToolCalls = 3 }, result: `3`},
	{name: "syntax error", src: "let x = 1;\nlet = = 2;", kind: fault.KindSyntax, line: 2},
	{name: "thrown on line 1", src: `throw new TypeError("bad input")`, kind: fault.KindScript, line: 1},
	{name: "thrown on line 3", src: "const a = 1;\nconst b = 2;\nnull.x;", kind: fault.KindScript, line: 3},
	{name: "thrown value", src: `throw {code: 7}`, kind: fault.KindScript},
	{name: "logs", src: `console.log("a", 1, {b: 2}); console.warn("w"); console.error(new Error("e").message); return 1`, result: `1`},
	{name: "log truncation", src: `for (let i = 0; i < 100; i++) console.log("line " + i); return 1`,
		limits: func(l *limits.Limits) { l.MaxLogBytes = 50 }, result: `1`},
	{name: "output limit", src: `return "x".repeat(2000)`,
		limits: func(l *limits.Limits) { l.MaxOutputBytes = 1000 }, kind: fault.KindOutputLimit},
	{name: "unsettled promise", src: `await new Promise(() => {})`, kind: fault.KindScript},
	{name: "stack overflow", src: `function f(n) { return f(n + 1) + 1 } return f(0)`, kind: fault.KindScript},
	{name: "string repeat guard", src: `try { "x".repeat(2 ** 30) } catch (e) { return e.name }`, result: `"RangeError"`},
	{name: "timeout", src: `for (;;) {}`,
		limits: func(l *limits.Limits) { l.Timeout = 300 * time.Millisecond; l.CPUTime = time.Minute }, kind: fault.KindTimeout},
	{name: "cpu limit", src: `for (;;) {}`,
		limits: func(l *limits.Limits) { l.CPUTime = 100 * time.Millisecond }, kind: fault.KindCPULimit, kindOnly: true},
	{name: "timeout during tool wait", src: `await tools.block({}); return 1`,
		limits: func(l *limits.Limits) { l.Timeout = 200 * time.Millisecond }, kind: fault.KindTimeout},
}

// parityRun is what one engine made of a case.
type parityRun struct {
	result string
	err    *fault.Error
	logs   []string
	trunc  bool
	trace  []string
}

func runCase(t *testing.T, eng ptcruntime.Engine, c parityCase) parityRun {
	t.Helper()
	l := testLimits()
	if c.limits != nil {
		c.limits(&l)
	}
	job, d := newJob(t, c.src, l, blockingTool(nil))
	out := eng.Run(context.Background(), job)
	r := parityRun{result: string(out.Result), err: out.Err}
	entries, trunc := job.Logs.Entries()
	for _, e := range entries {
		r.logs = append(r.logs, e.Level+":"+e.Message)
	}
	r.trunc = trunc
	for _, rec := range d.Trace() {
		r.trace = append(r.trace, traceLine(rec))
	}
	return r
}

func traceLine(rec core.Record) string {
	b, _ := json.Marshal([]any{rec.Seq, rec.Tool, rec.Arguments, rec.OK, rec.ErrorCode, rec.ErrorMessage, string(rec.Result)})
	return string(b)
}

// TestParity runs every case on the plain in-process JavaScript engine, on
// a pool in in-process mode and on a pool of worker processes, and
// compares results, errors, logs and traces.
func TestParity(t *testing.T) {
	engines := []struct {
		name string
		eng  ptcruntime.Engine
	}{
		{"worker", newPool(t, Config{})},
		{"inprocess", newPool(t, Config{Mode: ModeInProcess})},
	}
	plain := js.New()
	for _, c := range parityCases {
		t.Run(c.name, func(t *testing.T) {
			want := runCase(t, plain, c)
			checkCase(t, "js", c, want)
			for _, e := range engines {
				got := runCase(t, e.eng, c)
				checkCase(t, e.name, c, got)
				if got.result != want.result {
					t.Errorf("%s: result %s, plain engine %s", e.name, got.result, want.result)
				}
				if !sameError(got.err, want.err, c.kindOnly) {
					t.Errorf("%s: error %+v\nplain engine %+v", e.name, got.err, want.err)
				}
				if strings.Join(got.logs, "\n") != strings.Join(want.logs, "\n") || got.trunc != want.trunc {
					t.Errorf("%s: logs %q (truncated %v), plain engine %q (truncated %v)", e.name, got.logs, got.trunc, want.logs, want.trunc)
				}
				if strings.Join(got.trace, "\n") != strings.Join(want.trace, "\n") {
					t.Errorf("%s: trace\n%s\nplain engine\n%s", e.name, strings.Join(got.trace, "\n"), strings.Join(want.trace, "\n"))
				}
			}
		})
	}
}

func checkCase(t *testing.T, engine string, c parityCase, r parityRun) {
	t.Helper()
	if c.kind == fault.KindUnspecified {
		if r.err != nil {
			t.Fatalf("%s: unexpected error %v", engine, r.err)
		}
		if r.result != c.result {
			t.Fatalf("%s: result %s, want %s", engine, r.result, c.result)
		}
		return
	}
	if r.err == nil || r.err.Kind != c.kind {
		t.Fatalf("%s: error %v, want kind %s", engine, r.err, c.kind)
	}
	if c.line > 0 && r.err.Line != c.line {
		t.Errorf("%s: error at line %d, want %d (%v)", engine, r.err.Line, c.line, r.err)
	}
}

func sameError(a, b *fault.Error, kindOnly bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	if kindOnly {
		return a.Kind == b.Kind
	}
	return a.Kind == b.Kind && a.Message == b.Message && a.Line == b.Line && a.Column == b.Column &&
		a.Stack == b.Stack && a.Tool == b.Tool && a.Limit == b.Limit
}
