package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsonval"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// resume resumes a paused result with answers, failing the test on a
// request error.
func resume(t *testing.T, e *Executor, res *core.Result, answers ...core.Answer) *core.Result {
	t.Helper()
	p, ferr := e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation, Answers: answers})
	if ferr != nil {
		t.Fatalf("prepare resume: %v", ferr)
	}
	out, ferr := e.Continue(context.Background(), p)
	if ferr != nil {
		t.Fatalf("continue: %v", ferr)
	}
	return out
}

func run(t *testing.T, e *Executor, req core.Request) *core.Result {
	t.Helper()
	res, ferr := e.Execute(context.Background(), req, limits.Limits{})
	if ferr != nil {
		t.Fatal(ferr)
	}
	return res
}

var askTool = tools.Tool{Definition: tools.Definition{Name: "ask"}}

func approvalTool(runs *atomic.Int64) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: "send", RequiresApproval: true},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			return json.RawMessage(`"sent"`), nil
		}}
}

func TestPauseTogether(t *testing.T) {
	for _, parked := range []int{-1, 0} {
		var runs atomic.Int64
		e := durableExecutor(t, parked, counted(&runs))
		res := run(t, e, core.Request{Script: core.Script{Source: `
			const [c, x, y] = await Promise.all([tools.count({}), tools.ask({i: 1}), tools.ask({i: 2})]);
			return [c.run, x, y];`}, Resumable: true, ClientTools: []tools.Tool{askTool}})
		if len(res.Pending) != 2 || res.Pending[0].Seq != 2 || res.Pending[1].Seq != 3 {
			t.Fatalf("pending %+v", res.Pending)
		}
		if runs.Load() != 1 || len(res.Trace) != 1 || !res.Trace[0].OK {
			t.Fatalf("the server tool did not run once before the pause: %d, %+v", runs.Load(), res.Trace)
		}
		out := resume(t, e, res, core.Answer{CallID: "c3", Output: json.RawMessage(`"b"`)}, core.Answer{CallID: "c2", Output: json.RawMessage(`"a"`)})
		if string(out.Result) != `[1,"a","b"]` || runs.Load() != 1 {
			t.Fatalf("parked=%d: %s %v, runs %d, pending %+v", parked, out.Result, out.Error, runs.Load(), out.Pending)
		}
	}
}

func TestApprovals(t *testing.T) {
	script := core.Script{Source: `
		try { return await tools.send({to: "a"}); }
		catch (e) { return {name: e.name, code: e.code, message: e.message, tool: e.tool}; }`}
	var runs atomic.Int64
	send := approvalTool(&runs)
	send.Handler = func(context.Context, tools.Call) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`"sent"`), nil
	}
	for _, parked := range []int{-1, 0} {
		e := durableExecutor(t, parked, send)
		runs.Store(0)
		res := run(t, e, core.Request{Script: script, Resumable: true})
		if len(res.Pending) != 1 || res.Pending[0].Kind != core.ActionApproval || res.Pending[0].Reason != "its definition requires approval" {
			t.Fatalf("pending %+v", res.Pending)
		}
		if out := resume(t, e, res, core.Answer{CallID: "c1", Approve: true}); string(out.Result) != `"sent"` || runs.Load() != 1 {
			t.Fatalf("approved: %s %v, runs %d", out.Result, out.Error, runs.Load())
		}
		res = run(t, e, core.Request{Script: script, Resumable: true})
		out := resume(t, e, res, core.Answer{CallID: "c1", Deny: true, Reason: "not today"})
		if string(out.Result) != `{"name":"ToolError","code":"denied","message":"not today","tool":"send"}` || runs.Load() != 1 {
			t.Fatalf("denied: %s %v, runs %d", out.Result, out.Error, runs.Load())
		}
	}
	e := durableExecutor(t, 0, send)
	runs.Store(0)
	// Not resumable and nobody to ask: denied.
	out := run(t, e, core.Request{Script: script})
	if !strings.Contains(string(out.Result), `"code":"denied"`) || !strings.Contains(string(out.Result), "no way to ask") || runs.Load() != 0 {
		t.Fatalf("no approver: %s", out.Result)
	}
	// An approval callback decides.
	var asked core.Action
	out = run(t, e, core.Request{Script: script, Approve: func(_ context.Context, a core.Action) (bool, string) {
		asked = a
		return true, ""
	}})
	if string(out.Result) != `"sent"` || runs.Load() != 1 || asked.Tool != "send" || asked.IdempotencyKey != out.ExecutionID+"/1" {
		t.Fatalf("callback: %s, %+v", out.Result, asked)
	}
	// The caller asks to approve a tool the server does not require it for.
	runs.Store(0)
	e = durableExecutor(t, 0, counted(&runs))
	res := run(t, e, core.Request{Script: core.Script{Source: `return (await tools.count({})).run`}, Resumable: true, RequireApproval: []string{"count"}})
	if len(res.Pending) != 1 || res.Pending[0].Reason != "the caller asked to approve its calls" || runs.Load() != 0 {
		t.Fatalf("require_approval: %+v", res.Pending)
	}
	if _, ferr := e.Execute(context.Background(), core.Request{Script: script, RequireApproval: []string{"nope"}}, limits.Limits{}); ferr == nil || ferr.Code != fault.CodeInvalidArgument {
		t.Fatalf("unknown require_approval: %v", ferr)
	}
}

func TestBadAnswers(t *testing.T) {
	e := durableExecutor(t, 0, approvalTool(new(atomic.Int64)))
	res := run(t, e, core.Request{Script: core.Script{Source: `
		return await Promise.all([tools.ask({}), tools.send({})]);`}, Resumable: true,
		ClientTools: []tools.Tool{{Definition: tools.Definition{Name: "ask", OutputSchema: json.RawMessage(`{"type":"integer"}`)}}}})
	if len(res.Pending) != 2 {
		t.Fatalf("pending %+v", res.Pending)
	}
	ok1, ok2 := core.Answer{CallID: "c1", Output: json.RawMessage(`1`)}, core.Answer{CallID: "c2", Approve: true}
	cases := []struct {
		name    string
		answers []core.Answer
		want    string
	}{
		{"unknown call", []core.Answer{ok1, ok2, {CallID: "c9", Approve: true}}, `"c9"`},
		{"missing answer", []core.Answer{ok1}, `call_id "c2" (tools.send, waiting for approval) has no answer`},
		{"twice", []core.Answer{ok1, ok1, ok2}, "answered twice"},
		{"approval for a client tool", []core.Answer{{CallID: "c1", Approve: true}, ok2}, "not an approval"},
		{"output for an approval", []core.Answer{ok1, {CallID: "c2", Output: json.RawMessage(`1`)}}, "approve or deny"},
		{"schema", []core.Answer{{CallID: "c1", Output: json.RawMessage(`"x"`)}, ok2}, `(call_id "c1", tools.ask): output does not match the output schema`},
		{"not JSON", []core.Answer{{CallID: "c1", Output: json.RawMessage(`{`)}, ok2}, "not valid JSON"},
		{"two outcomes", []core.Answer{{CallID: "c1", Output: json.RawMessage(`1`), Approve: true}, ok2}, "exactly one"},
		{"nothing", []core.Answer{{CallID: "c1"}, ok2}, "exactly one"},
		{"error without code", []core.Answer{{CallID: "c1", Error: &tools.Error{Message: "x"}}, ok2}, "needs a code"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ferr := e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation, Answers: tc.answers})
			if ferr == nil || ferr.Code != fault.CodeInvalidArgument || !strings.Contains(ferr.Message, tc.want) {
				t.Fatalf("got %v, want INVALID_ARGUMENT with %q", ferr, tc.want)
			}
		})
	}
	// Nothing was used up: the right answers still resume it.
	if out := resume(t, e, res, ok2, ok1); string(out.Result) != `[1,"sent"]` {
		t.Fatalf("%s %v", out.Result, out.Error)
	}
}

func TestPauseLimits(t *testing.T) {
	src := core.Script{Source: `const a = await tools.ask({}); const b = await tools.ask({}); return [a, b];`}
	for _, parked := range []int{-1, 0} {
		e := durableExecutor(t, parked)
		res := run(t, e, core.Request{Script: src, Resumable: true, ClientTools: []tools.Tool{askTool}, Limits: limits.Limits{MaxPauses: 1}})
		if len(res.Pending) != 1 || res.EffectiveLimits.MaxPauses != 1 {
			t.Fatalf("first pause: %+v", res)
		}
		out := resume(t, e, res, core.Answer{CallID: "c1", Output: json.RawMessage(`1`)})
		if out.Error == nil || out.Error.Kind != fault.KindPauseLimit || out.Error.Limit != 1 || out.Error.Observed != 2 || len(out.Pending) != 0 {
			t.Fatalf("max_pauses: %+v", out.Error)
		}
		// The call the execution would have paused for is in the trace,
		// classified: it was cancelled when the execution ended.
		checkTraceClassified(t, out.Trace)
		if last := out.Trace[len(out.Trace)-1]; last.Seq != 2 || last.OK || last.ErrorCode != tools.CodeCancelled {
			t.Fatalf("max_pauses: the unanswered call's record is %+v", last)
		}
		res = run(t, e, core.Request{Script: src, Resumable: true, ClientTools: []tools.Tool{askTool}, Limits: limits.Limits{MaxPausedTime: time.Nanosecond}})
		out = resume(t, e, res, core.Answer{CallID: "c1", Output: json.RawMessage(`1`)})
		if out.Error == nil || out.Error.Kind != fault.KindPauseLimit || out.Error.Limit != 1 || out.Error.Observed <= 1 {
			t.Fatalf("max_paused_time: %+v", out.Error)
		}
	}
}

// checkTraceClassified fails unless every failed call in trace has an
// error code (ToolCallRecord.error_code is empty only when ok).
func checkTraceClassified(t *testing.T, trace []core.Record) {
	t.Helper()
	for _, r := range trace {
		if !r.OK && r.ErrorCode == "" || r.OK && r.ErrorCode != "" {
			t.Fatalf("record %+v: ok=%v with error_code %q", r, r.OK, r.ErrorCode)
		}
	}
}

func limitsZero() limits.Limits { return limits.Limits{} }

// TestCheckOutputDepth: an answer nested deeper than ptc decodes is refused
// as too deep, with the limit, not as invalid JSON; one just within the
// limit passes, and text that is not JSON is still said to be so.
func TestCheckOutputDepth(t *testing.T) {
	nested := func(depth int) []byte {
		return []byte(strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth))
	}
	var p Prepared
	for _, def := range []tools.Definition{{Name: "free"}, {Name: "typed", OutputSchema: json.RawMessage(`{"type":"array"}`)}} {
		c, err := tools.Compile(tools.Tool{Definition: def, Handler: unreachable})
		if err != nil {
			t.Fatal(err)
		}
		p.tools = append(p.tools, c)
	}
	cases := []struct {
		name string
		out  []byte
		want string // "" when accepted
	}{
		{"at the limit", nested(jsonval.MaxDepth), ""},
		{"too deep", nested(jsonval.MaxDepth + 1), fmt.Sprintf("output is nested more than %d levels deep", jsonval.MaxDepth)},
		{"too deep and cut off", nested(jsonval.MaxDepth + 1)[:jsonval.MaxDepth+5], fmt.Sprintf("output is nested more than %d levels deep", jsonval.MaxDepth)},
		{"not JSON", []byte(`[1,`), "output is not valid JSON"},
	}
	for _, tool := range []string{"free", "typed"} {
		for _, tc := range cases {
			t.Run(tool+"/"+tc.name, func(t *testing.T) {
				ferr := p.checkOutput(tool, tc.out)
				if tc.want == "" {
					if ferr != nil {
						t.Fatalf("refused: %v", ferr)
					}
					return
				}
				if ferr == nil || ferr.Code != fault.CodeInvalidArgument || !strings.Contains(ferr.Message, tc.want) {
					t.Fatalf("got %v, want INVALID_ARGUMENT with %q", ferr, tc.want)
				}
			})
		}
	}
}
