package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
	"github.com/ptcrun/ptc/tools"
)

// regexp2's shared timeout clock is a package-level goroutine that stops
// by itself a while after the last timed match.
func TestMain(m *testing.M) {
	if runProbeChild() {
		return
	}
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock"))
}

// testTools are small tools with strict schemas used across the tests
// (t may be nil in a probe child process).
func testTools(t testing.TB) []*tools.Compiled {
	if t != nil {
		t.Helper()
	}
	defs := []tools.Tool{
		{Definition: tools.Definition{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }},
		{Definition: tools.Definition{Name: "add", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
				var in struct{ A, B float64 }
				if err := json.Unmarshal(c.Arguments, &in); err != nil {
					return nil, err
				}
				return json.Marshal(in.A + in.B)
			}},
		{Definition: tools.Definition{Name: "ident", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }, TrustOutput: true, Inline: true},
		{Definition: tools.Definition{Name: "identGo", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }, TrustOutput: true},
		{Definition: tools.Definition{Name: "fail"},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
				return nil, tools.Errorf("not_found", "no such thing")
			}},
		{Definition: tools.Definition{Name: "boom"},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) { panic("kaboom") }},
		{Definition: tools.Definition{Name: "block"},
			Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}},
		{Definition: tools.Definition{Name: "ns.inner.deep"},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`"deep"`), nil }},
		{Definition: tools.Definition{Name: "deepout"}, Handler: deepJSON},
		{Definition: tools.Definition{Name: "deepoutTrusted"}, Handler: deepJSON, TrustOutput: true},
		{Definition: tools.Definition{Name: "badout", OutputSchema: json.RawMessage(`{"type":"string"}`)},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`42`), nil }},
	}
	var out []*tools.Compiled
	for _, d := range defs {
		c, err := tools.Compile(d)
		if err != nil {
			panic(err)
		}
		out = append(out, c)
	}
	return out
}

// deepJSON is a tool result nested 20,000 levels deep.
func deepJSON(context.Context, tools.Call) (json.RawMessage, error) {
	return json.RawMessage(strings.Repeat("[", 20000) + strings.Repeat("]", 20000)), nil
}

type runOpts struct {
	input  string
	limits limits.Limits
	tools  []*tools.Compiled
}

func run(t testing.TB, e *js.Engine, src string, o runOpts) (*runtime.Outcome, *bridge.Dispatcher, *runtime.LogBuffer) {
	t.Helper()
	lim := limits.DefaultPolicy().Resolve(o.limits, limits.Limits{})
	if o.tools == nil {
		o.tools = testTools(t)
	}
	d := bridge.New(bridge.Config{ExecutionID: "x1", Tools: o.tools, MaxCalls: lim.MaxToolCalls, MaxConcurrent: lim.MaxConcurrentToolCalls})
	logs := runtime.NewLogBuffer(time.Now(), lim, nil)
	job := &runtime.Job{ExecutionID: "x1", Source: src, Input: json.RawMessage(o.input), Limits: lim, Tools: d, Logs: logs}
	return e.Run(context.Background(), job), d, logs
}

func TestResults(t *testing.T) {
	e := js.New()
	cases := []struct {
		name, src, input, want string
	}{
		{"object", `return {ok: 1}`, "", `{"ok":1}`},
		{"undefined is null", `const a = 1;`, "", `null`},
		{"input", `return input.n * 2`, `{"n": 21}`, `42`},
		{"null input", `return input`, ``, `null`},
		{"await tool", `const r = await tools.add({a: 1, b: 2}); return r`, "", `3`},
		{"chain", `let s = 0; for (let i = 0; i < 50; i++) { s += await tools.add({a: i, b: 0}); } return s`, "", `1225`},
		{"nested namespace", `return await tools.ns.inner.deep()`, "", `"deep"`},
		{"promise all", `const rs = await Promise.all([1,2,3].map(i => tools.add({a: i, b: i}))); return rs`, "", `[2,4,6]`},
		{"caught tool error", `try { await tools.fail({}); } catch (e) { return [e.name, e.code, e.tool, e.message, e instanceof Error] }`, "",
			`["ToolError","not_found","fail","no such thing",true]`},
		{"caught argument error", `try { await tools.add({a: "x"}); } catch (e) { return {name: e.name, code: e.code, errors: e.errors.map(x => x.keyword).sort()} }`, "",
			`{"name":"ToolArgumentError","code":"invalid_arguments","errors":["required","type"]}`},
		{"caught panic", `try { await tools.boom({}); } catch (e) { return e.code }`, "", `"tool_panic"`},
		{"caught bad output", `try { await tools.badout({}); } catch (e) { return e.code }`, "", `"invalid_output"`},
		{"unknown tool", `try { await tools.nope({}); } catch (e) { return [e.code, e.message.includes("available tools")] }`, "", `["unknown_tool",true]`},
		{"await tools object", `const t = await tools; return typeof t.add`, "", `"function"`},
		{"tool result is a real array", `const r = await tools.echo({xs: [1]}); r.xs.push(2); return r.xs.length`, "", `2`},
		{"json of tool arg with toJSON", `return await tools.echo({d: {toJSON() { return "j" }}})`, "", `{"d":"j"}`},
		{"date result", `return {d: new Date(0)}`, "", `{"d":"1970-01-01T00:00:00.000Z"}`},
		{"string repeat ok", `return "ab".repeat(3)`, "", `"ababab"`},
		{"regexp", `return /a(b+)c/.exec("xabbbc")[1]`, "", `"bbb"`},
		{"class and generators", `class A { *g() { yield 1; yield 2 } } return [...new A().g()]`, "", `[1,2]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, _ := run(t, e, tc.src, runOpts{input: tc.input})
			if out.Err != nil {
				t.Fatalf("error: %v", out.Err)
			}
			if string(out.Result) != tc.want {
				t.Fatalf("result = %s, want %s", out.Result, tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	e := js.New()
	cases := []struct {
		name      string
		src       string
		lim       limits.Limits
		kind      fault.Kind
		msg       string
		line, col int
	}{
		{"syntax", "const a = 1;\nconst = 2;", limits.Limits{}, fault.KindSyntax, "SyntaxError", 2, 7},
		{"syntax line 1", "return )", limits.Limits{}, fault.KindSyntax, "SyntaxError", 1, 8},
		{"throw error", "const a = 1;\n\nthrow new Error('bad thing');", limits.Limits{}, fault.KindScript, "Error: bad thing", 3, 7},
		{"throw on line 1", "throw new TypeError('t')", limits.Limits{}, fault.KindScript, "TypeError: t", 1, 7},
		{"reference error", "const a = 1;\nreturn b + 1;", limits.Limits{}, fault.KindScript, "ReferenceError: b is not defined", 2, 8},
		{"throw string", `throw "plain"`, limits.Limits{}, fault.KindScript, `uncaught exception: "plain"`, 0, 0},
		{"throw object", `throw {code: 7}`, limits.Limits{}, fault.KindScript, `uncaught exception: {"code":7}`, 0, 0},
		{"throw object with hostile toString", `throw {toJSON() { throw 1 }, toString() { throw 2 }}`, limits.Limits{}, fault.KindScript, "cannot be printed", 0, 0},
		{"after await", "await tools.add({a:1,b:2});\nnull.x;", limits.Limits{}, fault.KindScript, "TypeError", 2, 6},
		{"cycle", `const a = {}; a.a = a; return a`, limits.Limits{}, fault.KindScript, "cannot be converted to JSON", 0, 0},
		{"bigint", `return {n: 10n}`, limits.Limits{}, fault.KindScript, "BigInt", 0, 0},
		{"throwing getter", `return {get x() { throw new Error("getter") }}`, limits.Limits{}, fault.KindScript, "getter", 1, 25},
		{"uncaught tool error", `await tools.fail({})`, limits.Limits{}, fault.KindScript, "uncaught ToolError from tool fail", 1, 17},
		{"never settles", `await new Promise(() => {})`, limits.Limits{}, fault.KindScript, "can never settle", 0, 0},
		{"timeout spin", `while (true) {}`, limits.Limits{Timeout: 50 * time.Millisecond, CPUTime: time.Minute}, fault.KindTimeout, "time limit", 0, 0},
		{"timeout waiting on tool", `await tools.block({})`, limits.Limits{Timeout: 50 * time.Millisecond}, fault.KindTimeout, "time limit", 0, 0},
		{"cpu spin", `for (;;) {}`, limits.Limits{CPUTime: 50 * time.Millisecond, Timeout: time.Minute}, fault.KindCPULimit, "CPU time", 0, 0},
		{"cpu spin after await", "await tools.add({a:1,b:1});\nfor (;;) {}", limits.Limits{CPUTime: 50 * time.Millisecond, Timeout: time.Minute}, fault.KindCPULimit, "CPU time", 0, 0},
		{"output limit", `return "x".repeat(2000)`, limits.Limits{MaxOutputBytes: 1000}, fault.KindOutputLimit, "2002 bytes", 0, 0},
		{"tool call limit uncaught", `for (let i = 0; i < 10; i++) await tools.add({a: i, b: 1})`, limits.Limits{MaxToolCalls: 3}, fault.KindToolCallLimit, "tool call limit of 3", 0, 0},
		{"stack overflow", `function f(n) { return f(n + 1) + 1 } return f(0)`, limits.Limits{}, fault.KindScript, "call stack", 1, 0},
		{"native recursion", `const o = {}; o.toString = () => String(o); return String(o)`, limits.Limits{}, fault.KindScript, "call stack", 0, 0},
		{"closing the wrapper", `}); (1`, limits.Limits{}, fault.KindSyntax, "", 0, 0},
		{"huge repeat", `return "abc".repeat(2 ** 30)`, limits.Limits{MemoryBytes: 64 << 20}, fault.KindScript, "RangeError", 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, _ := run(t, e, tc.src, runOpts{limits: tc.lim})
			if out.Err == nil {
				t.Fatalf("no error; result %s", out.Result)
			}
			if out.Err.Kind != tc.kind {
				t.Fatalf("kind = %v, want %v (%v)", out.Err.Kind, tc.kind, out.Err)
			}
			if !strings.Contains(out.Err.Message, tc.msg) {
				t.Fatalf("message %q does not contain %q", out.Err.Message, tc.msg)
			}
			if tc.line != 0 && out.Err.Line != tc.line {
				t.Fatalf("line = %d, want %d (%v)", out.Err.Line, tc.line, out.Err)
			}
			if tc.col != 0 && out.Err.Column != tc.col {
				t.Fatalf("column = %d, want %d (%v)", out.Err.Column, tc.col, out.Err)
			}
		})
	}
}

func TestToolCallLimitCatchable(t *testing.T) {
	out, d, _ := run(t, js.New(), `let n = 0; try { for (;;) { await tools.add({a: 1, b: 1}); n++ } } catch (e) { return [n, e.name, e.code] }`,
		runOpts{limits: limits.Limits{MaxToolCalls: 5}})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if string(out.Result) != `[5,"ToolCallLimitError","tool_call_limit"]` {
		t.Fatalf("result %s", out.Result)
	}
	// The refused call is counted and traced too.
	if tr := d.Trace(); d.Calls() != 6 || len(tr) != 6 || tr[5].ErrorCode != tools.CodeCallLimit {
		t.Fatalf("calls %d trace %+v", d.Calls(), tr)
	}
}

// TestConcurrency shows that Promise.all really runs calls at once: the
// tool blocks until `want` calls are in flight, so the script can only
// finish if they run concurrently (no timing involved).
func TestConcurrency(t *testing.T) {
	const want = 8
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	gate := tools.Tool{Definition: tools.Definition{Name: "gate"},
		Handler: func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			mu.Lock()
			cond.Broadcast()
			for peak.Load() < want && ctx.Err() == nil {
				cond.Wait()
			}
			mu.Unlock()
			return json.RawMessage(`1`), nil
		}}
	gc, err := tools.Compile(gate)
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`const r = await Promise.all(Array.from({length: %d}, () => tools.gate({}))); return r.length`, want)
	out, _, _ := run(t, js.New(), src, runOpts{tools: []*tools.Compiled{gc},
		limits: limits.Limits{MaxConcurrentToolCalls: want, Timeout: time.Minute}})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if got := peak.Load(); got != want {
		t.Fatalf("peak in flight = %d, want %d", got, want)
	}

	// With a concurrency limit below want the same script can never see
	// `want` calls at once: the bound is enforced (calls queue).
	peak.Store(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim := limits.DefaultPolicy().Resolve(limits.Limits{MaxConcurrentToolCalls: 2, Timeout: time.Minute}, limits.Limits{})
	d := bridge.New(bridge.Config{ExecutionID: "x2", Tools: []*tools.Compiled{gc}, MaxConcurrent: 2, MaxCalls: 100})
	done := make(chan *runtime.Outcome)
	go func() {
		done <- js.New().Run(ctx, &runtime.Job{Source: src, Limits: lim, Tools: d})
	}()
	mu.Lock()
	for peak.Load() < 2 {
		cond.Wait()
	}
	mu.Unlock()
	cancel()
	mu.Lock()
	cond.Broadcast()
	mu.Unlock()
	out = <-done
	if out.Err == nil || out.Err.Kind != fault.KindCancelled {
		t.Fatalf("want CANCELLED, got %v", out.Err)
	}
	if p := peak.Load(); p != 2 {
		t.Fatalf("peak in flight = %d with limit 2", p)
	}
}

func TestTraceOrderAndSeq(t *testing.T) {
	out, d, _ := run(t, js.New(), `await Promise.all([tools.add({a:1,b:1}), tools.echo({x:1}), tools.add({a:2,b:2})]); return 1`, runOpts{})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	tr := d.Trace()
	if len(tr) != 3 || tr[0].Tool != "add" || tr[1].Tool != "echo" || tr[2].Tool != "add" || tr[2].Seq != 3 {
		t.Fatalf("trace %+v", tr)
	}
	if string(tr[1].Arguments) != `{"x":1}` || !tr[1].OK {
		t.Fatalf("record %+v", tr[1])
	}
}

func TestLogs(t *testing.T) {
	out, _, logs := run(t, js.New(), `console.log("a", 1, {b: 2}); console.error("e"); for (let i = 0; i < 1000; i++) console.log("x".repeat(100)); return 1`,
		runOpts{limits: limits.Limits{MaxLogBytes: 500}})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	entries, truncated := logs.Entries()
	if !truncated {
		t.Fatal("logs not marked truncated")
	}
	if entries[0].Message != `a 1 {"b":2}` || entries[1].Level != "error" {
		t.Fatalf("entries %+v", entries[:2])
	}
	if logs.Bytes() > 500 {
		t.Fatalf("kept %d bytes over the cap", logs.Bytes())
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	var started sync.WaitGroup
	started.Add(1)
	blk := tools.Tool{Definition: tools.Definition{Name: "blk"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		started.Done()
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	bc, _ := tools.Compile(blk)
	d := bridge.New(bridge.Config{Tools: []*tools.Compiled{bc}, MaxConcurrent: 4})
	done := make(chan *runtime.Outcome)
	go func() { done <- js.New().Run(ctx, &runtime.Job{Source: `await tools.blk()`, Limits: lim, Tools: d}) }()
	started.Wait()
	cancel()
	out := <-done
	if out.Err == nil || out.Err.Kind != fault.KindCancelled {
		t.Fatalf("got %v", out.Err)
	}
	if tr := d.Trace(); len(tr) != 1 || tr[0].ErrorCode != tools.CodeCancelled {
		t.Fatalf("trace %+v", tr)
	}
}

func TestProgramCache(t *testing.T) {
	e := js.New(js.WithProgramCache(2))
	p1, err := e.Compile(js.Source{Code: "return 1"})
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := e.Compile(js.Source{Code: "return 1"})
	if p1 != p2 {
		t.Fatal("second compile did not hit the cache")
	}
	_, _ = e.Compile(js.Source{Code: "return 2"})
	_, _ = e.Compile(js.Source{Code: "return 3"})
	p3, _ := e.Compile(js.Source{Code: "return 1"})
	if p3 == p1 {
		t.Fatal("entry was not evicted")
	}
}

func TestSearchAndDescribe(t *testing.T) {
	out, d, _ := run(t, js.New(), `
const hits = await tools.$search("add numbers");
const desc = await tools.$describe("add");
let missing;
try { await tools.$describe("nope") } catch (e) { missing = e.code }
return {first: hits[0].name, keys: Object.keys(tools).includes("$search"), ts: desc.typescript.includes("add("), req: desc.input_schema.required, missing}`, runOpts{})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if string(out.Result) != `{"first":"add","keys":false,"ts":true,"req":["a","b"],"missing":"unknown_tool"}` {
		t.Fatalf("result %s", out.Result)
	}
	if d.Calls() != 0 {
		t.Fatalf("helpers counted as tool calls: %d", d.Calls())
	}
}

// TestInlineCalls: inline-capable calls give the same results and trace
// as goroutine calls, run concurrently when made together, and a call the
// script never waits for is still recorded (cancelled at the end).
func TestInlineCalls(t *testing.T) {
	out, d, _ := run(t, js.New(), `
let s = 0;
for (let i = 0; i < 10; i++) s += (await tools.ident({a: i, b: 0})).a;
const both = await Promise.all([tools.ident({a: 1, b: 1}), tools.ident({a: 2, b: 2}), tools.add({a: 1, b: 2})]);
tools.ident({a: 99, b: 0});
return [s, both.map(x => typeof x === "number" ? x : x.a)];`, runOpts{})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if string(out.Result) != `[45,[1,2,3]]` {
		t.Fatalf("result %s", out.Result)
	}
	tr := d.Trace()
	if len(tr) != 14 {
		t.Fatalf("trace has %d calls", len(tr))
	}
	for i, r := range tr[:13] {
		if !r.OK || r.Seq != int32(i+1) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if last := tr[13]; last.OK || last.ErrorCode != tools.CodeCancelled {
		t.Fatalf("unawaited call: %+v", last)
	}
}

func TestWithMaxCallStack(t *testing.T) {
	// A stack overflow is uncatchable in goja: the execution fails, naming
	// the configured depth.
	src := `function depth(n) { return depth(n + 1) + 1 } return depth(0)`
	out, _, _ := run(t, js.New(js.WithMaxCallStack(100)), src, runOpts{})
	if out.Err == nil || out.Err.Kind != fault.KindScript || !strings.Contains(out.Err.Message, "(100 frames)") {
		t.Fatalf("error %v", out.Err)
	}
}
