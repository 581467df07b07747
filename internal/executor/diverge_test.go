package executor

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/tools"
)

// reseal opens a continuation, lets edit change its state, and seals it
// again with the executor's key: a stand-in for a script or a server whose
// re-run does not match its journal.
func reseal(t *testing.T, e *Executor, tok string, edit func(*durable.State)) string {
	t.Helper()
	o, ferr := e.durable.Open(context.Background(), tok, "")
	if ferr != nil {
		t.Fatal(ferr)
	}
	st, ferr := o.State(context.Background())
	if ferr != nil {
		t.Fatal(ferr)
	}
	edit(st)
	s, ferr := e.durable.Seal(context.Background(), "", st)
	if ferr != nil {
		t.Fatal(ferr)
	}
	return s.Token
}

// TestDivergence: a re-run that does not match its journal ends with
// RESUME_DIVERGED, naming the call, and runs no tool.
func TestDivergence(t *testing.T) {
	src := core.Script{Source: `
		const a = await tools.count({n: 1});
		const b = await tools.ask({});
		return [a.run, b];`}
	cases := []struct {
		name string
		edit func(*durable.State)
		want string
	}{
		{"other arguments", func(st *durable.State) {
			e := &st.Journal.Calls[0]
			e.Args = json.RawMessage(`{"n":2}`)
			e.ArgsSHA256 = sha256.Sum256(e.Args)
		}, `call #1: the script called tools.count({"n":1}) where the paused run called tools.count({"n":2})`},
		{"other tool", func(st *durable.State) { st.Journal.Calls[0].Tool = "other" }, "where the paused run called tools.other"},
		{"a call the paused run waited for, changed", func(st *durable.State) {
			st.Journal.Pending[0].Arguments = json.RawMessage(`{"x":1}`)
		}, `at call #2: the script called tools.ask({}) where the paused run waited for tools.ask({"x":1})`},
		{"a call not made", func(st *durable.State) {
			st.Journal.Calls = append(st.Journal.Calls, st.Journal.Calls[0])
			st.Journal.Calls[1].Seq = 7
		}, "went on to receive the result of tools.count (call #7), a call it has not made"},
		{"a pending call not made", func(st *durable.State) {
			st.Journal.Pending = append(st.Journal.Pending, core.Action{CallID: "c9", Kind: core.ActionClientTool, Seq: 9, Tool: "ask", Arguments: json.RawMessage(`{}`)})
		}, "without having made the call tools.ask (call #9)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomicCounter
			e := durableExecutor(t, -1, counted(&runs.Int64))
			res := run(t, e, core.Request{Script: src, Resumable: true, ClientTools: []tools.Tool{askTool}})
			tok := reseal(t, e, res.Continuation, tc.edit)
			answers := []core.Answer{{CallID: "c2", Output: json.RawMessage(`1`)}}
			if tc.name == "a pending call not made" {
				answers = append(answers, core.Answer{CallID: "c9", Output: json.RawMessage(`1`)})
			}
			if tc.name == "a call the paused run waited for, changed" {
				answers = []core.Answer{{CallID: "c2", Output: json.RawMessage(`1`)}}
			}
			p, ferr := e.PrepareResume(context.Background(), Resume{Continuation: tok, Answers: answers})
			if ferr != nil {
				t.Fatal(ferr)
			}
			out, ferr := e.Continue(context.Background(), p)
			if ferr != nil {
				t.Fatal(ferr)
			}
			if out.Error == nil || out.Error.Kind != fault.KindDiverged || !strings.Contains(out.Error.Message, tc.want) {
				t.Fatalf("got %v, want RESUME_DIVERGED with %q", out.Error, tc.want)
			}
			checkTraceClassified(t, out.Trace)
			if runs.Load() != 1 {
				t.Fatalf("the server tool ran %d times", runs.Load())
			}
		})
	}
}

// TestLimitsSpanPauses: a resumed execution gets what is left of its
// timeout and CPU time, and a breach reports the whole limit and the
// whole use.
func TestLimitsSpanPauses(t *testing.T) {
	src := core.Script{Source: `const b = await tools.ask({}); let s = 0; for (let i = 0; i < 1e9; i++) s += i; return s;`}
	for _, tc := range []struct {
		name string
		kind fault.Kind
		edit func(*durable.State)
	}{
		{"timeout", fault.KindTimeout, func(st *durable.State) { st.Usage.Wall = st.Limits.Timeout - time.Millisecond }},
		{"cpu", fault.KindCPULimit, func(st *durable.State) { st.Usage.CPU = st.Limits.CPUTime - time.Millisecond }},
		// So little left that the re-run is stopped before it reaches
		// the pause point: a breach, not a divergence.
		{"timeout before the pause point", fault.KindTimeout, func(st *durable.State) { st.Usage.Wall = st.Limits.Timeout - time.Nanosecond }},
		{"cpu before the pause point", fault.KindCPULimit, func(st *durable.State) { st.Usage.CPU = st.Limits.CPUTime - time.Nanosecond }},
	} {
		for _, parked := range []int{-1} {
			t.Run(tc.name, func(t *testing.T) {
				e := durableExecutor(t, parked)
				res := run(t, e, core.Request{Script: src, Resumable: true, ClientTools: []tools.Tool{askTool},
					Limits: limits.Limits{Timeout: 20 * time.Second, CPUTime: 20 * time.Second}})
				tok := reseal(t, e, res.Continuation, tc.edit)
				p, ferr := e.PrepareResume(context.Background(), Resume{Continuation: tok, Answers: []core.Answer{{CallID: "c1", Output: json.RawMessage(`1`)}}})
				if ferr != nil {
					t.Fatal(ferr)
				}
				out, ferr := e.Continue(context.Background(), p)
				if ferr != nil {
					t.Fatal(ferr)
				}
				if out.Error == nil || out.Error.Kind != tc.kind || out.Error.Limit != int64(20*time.Second) || out.Error.Observed < out.Error.Limit {
					t.Fatalf("got %+v", out.Error)
				}
			})
		}
	}
}

// atomicCounter counts tool runs.
type atomicCounter struct{ atomic.Int64 }

// TestParkedTimeout: a parked execution's time budget stops while it is
// parked and runs again when it resumes; a script that then never ends
// breaches the whole timeout.
// TestParkedWithInProcessPool: JavaScript run by a worker pool in
// ModeInProcess (as ptcd's in-process mode builds it) runs in this
// process, so a resumable execution parks while paused and a resume goes
// on from memory, as without a pool.
func TestParkedWithInProcessPool(t *testing.T) {
	m, err := durable.New(durable.Config{Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	e := newExecutor(t, Config{Durable: m, Workers: &worker.Config{Mode: worker.ModeInProcess}})
	res := run(t, e, core.Request{Script: core.Script{Source: `const a = await tools.ask({}); return a + 1`}, Resumable: true,
		ClientTools: []tools.Tool{askTool}})
	if len(res.Pending) != 1 || e.parked.len() != 1 {
		t.Fatalf("not parked: %+v, %d parked", res, e.parked.len())
	}
	out := resume(t, e, res, core.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`41`)})
	if out.Error != nil || string(out.Result) != "42" || e.parked.len() != 0 {
		t.Fatalf("resumed: %s %v, %d parked", out.Result, out.Error, e.parked.len())
	}
}

func TestParkedTimeout(t *testing.T) {
	e := durableExecutor(t, 0)
	res := run(t, e, core.Request{Script: core.Script{Source: `await tools.ask({}); for (;;) {}`}, Resumable: true,
		ClientTools: []tools.Tool{askTool}, Limits: limits.Limits{Timeout: 2 * time.Second, CPUTime: time.Minute}})
	if len(res.Pending) != 1 || e.parked.len() != 1 {
		t.Fatalf("not parked: %+v", res)
	}
	out := resume(t, e, res, core.Answer{CallID: "c1", Output: json.RawMessage(`1`)})
	if out.Error == nil || out.Error.Kind != fault.KindTimeout || out.Error.Limit != int64(2*time.Second) {
		t.Fatalf("got %+v", out.Error)
	}
}

func TestRunCtx(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := newRunCtx(parent, time.Hour)
	if _, ok := c.Deadline(); !ok {
		t.Fatal("no deadline while running")
	}
	c.pause()
	if _, ok := c.Deadline(); ok {
		t.Fatal("a deadline while paused")
	}
	c.resume(context.Background())
	if d, ok := c.Deadline(); !ok || time.Until(d) > time.Hour {
		t.Fatal("the budget grew", d)
	}
	cancel()
	<-c.Done()
	if c.Err() != context.Canceled || c.expired() {
		t.Fatal(c.Err(), c.expired())
	}
	c.release()
	c = newRunCtx(context.Background(), time.Nanosecond)
	<-c.Done()
	if c.Err() != context.DeadlineExceeded || !c.expired() {
		t.Fatal(c.Err())
	}
	c.release()
}
