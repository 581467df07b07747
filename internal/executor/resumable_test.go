package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// counted is a server tool that counts its runs (a side effect).
func counted(runs *atomic.Int64) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: "count"}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
		n := runs.Add(1)
		return json.RawMessage(fmt.Sprintf(`{"run":%d,"key":%q}`, n, c.IdempotencyKey)), nil
	}}
}

func durableExecutor(t *testing.T, parked int, ts ...tools.Tool) *Executor {
	t.Helper()
	m, err := durable.New(durable.Config{Keys: []durable.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	for _, tl := range ts {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return newExecutor(t, Config{Registry: reg, Durable: m, Parked: ParkedConfig{Max: parked}})
}

func TestResumableClientTool(t *testing.T) {
	for _, parked := range []int{-1, 0} {
		t.Run(fmt.Sprintf("parked=%d", parked), func(t *testing.T) {
			var runs atomic.Int64
			e := durableExecutor(t, parked, counted(&runs))
			req := core.Request{Script: core.Script{Source: `
				const a = await tools.count({n: 1});
				console.log("before");
				const b = await tools.ask({q: "x"});
				console.log("after", b);
				const c = await tools.count({n: 2});
				return {a, b, c, r: Math.random() < 2};`},
				Resumable:   true,
				ClientTools: []tools.Tool{{Definition: tools.Definition{Name: "ask", OutputSchema: json.RawMessage(`{"type":"string"}`)}}},
			}
			res, ferr := e.Execute(context.Background(), req, limits.Limits{})
			if ferr != nil {
				t.Fatal(ferr)
			}
			if res.Error != nil || len(res.Pending) != 1 || res.Continuation == "" {
				t.Fatalf("not paused: %+v", res)
			}
			a := res.Pending[0]
			if a.Kind != core.ActionClientTool || a.Tool != "ask" || string(a.Arguments) != `{"q":"x"}` {
				t.Fatalf("pending %+v", a)
			}
			if len(res.Logs) != 1 || res.Logs[0].Message != "before" {
				t.Fatalf("logs %+v", res.Logs)
			}
			if _, ferr := e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation,
				Answers: []core.Answer{{CallID: a.CallID, Output: json.RawMessage(`42`)}}}); ferr == nil {
				t.Fatal("an output that fails the schema was accepted")
			}
			p, ferr := e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation,
				Answers: []core.Answer{{CallID: a.CallID, Output: json.RawMessage(`"yes"`)}}})
			if ferr != nil {
				t.Fatal(ferr)
			}
			res2, ferr := e.Continue(context.Background(), p)
			if ferr != nil {
				t.Fatal(ferr)
			}
			if res2.Error != nil {
				t.Fatalf("error %v", res2.Error)
			}
			want := `{"a":{"run":1,"key":"` + res.ExecutionID + `/1"},"b":"yes","c":{"run":2,"key":"` + res.ExecutionID + `/3"},"r":true}`
			if string(res2.Result) != want {
				t.Fatalf("result %s\nwant   %s", res2.Result, want)
			}
			if runs.Load() != 2 {
				t.Fatalf("the server tool ran %d times", runs.Load())
			}
			if len(res2.Logs) != 1 || res2.Logs[0].Message != `after yes` {
				t.Fatalf("logs %+v", res2.Logs)
			}
			if len(res2.Trace) != 3 || res2.Stats.ToolCalls != 3 {
				t.Fatalf("trace %+v", res2.Trace)
			}
			// A retry gets the same outcome; nothing runs again.
			again, ferr := e.Continue(context.Background(), p)
			if ferr != nil || string(again.Result) != want || runs.Load() != 2 {
				t.Fatalf("retry: %v %s, %d runs", ferr, again.Result, runs.Load())
			}
			// Other answers are refused.
			p, ferr = e.PrepareResume(context.Background(), Resume{Continuation: res.Continuation,
				Answers: []core.Answer{{CallID: a.CallID, Output: json.RawMessage(`"no"`)}}})
			if ferr == nil {
				_, ferr = e.Continue(context.Background(), p)
			}
			if ferr == nil || ferr.Reason != fault.ReasonContinuationUsed || !strings.Contains(ferr.Message, "other answers") {
				t.Fatalf("a continuation resumed twice: %v", ferr)
			}
		})
	}
}
