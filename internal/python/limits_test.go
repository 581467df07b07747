package python

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// TestLimits hits each limit from Python.
func TestLimits(t *testing.T) {
	cases := []struct {
		name string
		src  string
		lim  limits.Limits
		kind fault.Kind
	}{
		{name: "timeout", src: "while True:\n    pass", lim: limits.Limits{Timeout: time.Second}, kind: fault.KindTimeout},
		{name: "timeout while waiting for a call", src: "await tools.hang()", lim: limits.Limits{Timeout: time.Second}, kind: fault.KindTimeout},
		{name: "cpu", src: "while True:\n    pass", lim: limits.Limits{CPUTime: time.Second, Timeout: time.Minute}, kind: fault.KindCPULimit},
		{name: "memory at once", src: "x = bytearray(256 * 1024 * 1024)", lim: limits.Limits{MemoryBytes: 64 << 20}, kind: fault.KindMemoryLimit},
		{name: "memory bit by bit", src: "a = []\nwhile True:\n    a.append('x' * 10**6)", lim: limits.Limits{MemoryBytes: 64 << 20}, kind: fault.KindMemoryLimit},
		{name: "memory below the interpreter's start", src: "return 1", lim: limits.Limits{MemoryBytes: 4 << 20}, kind: fault.KindMemoryLimit},
		{name: "tool calls", src: "for i in range(5):\n    await tools.echo(i=i)", lim: limits.Limits{MaxToolCalls: 3}, kind: fault.KindToolCallLimit},
		{name: "output", src: "return 'x' * 5000", lim: limits.Limits{MaxOutputBytes: 1000}, kind: fault.KindOutputLimit},
		{name: "output far over the frame bound", src: "return 'x' * (6 << 20)", lim: limits.Limits{MaxOutputBytes: 1000}, kind: fault.KindOutputLimit},
	}
	hang := tools.Tool{Definition: tools.Definition{Name: "hang"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	for _, via := range callers {
		for _, c := range cases {
			t.Run(via.name+"/"+c.name, func(t *testing.T) {
				out, _ := runVia(t, via.awaited, c.src, "", c.lim, hang)
				if out.Err == nil || out.Err.Kind != c.kind {
					t.Fatalf("outcome %s %v, want %s", out.Result, out.Err, c.kind)
				}
				if out.Err.Limit == 0 {
					t.Errorf("breach %v has no limit", out.Err)
				}
			})
		}
	}
}

// TestToolCallLimitCaught: a call refused for the budget is a catchable
// ToolError with the code tool_call_limit.
func TestToolCallLimitCaught(t *testing.T) {
	src := "await tools.echo()\ntry:\n    await tools.echo()\nexcept ToolError as e:\n    return [e.name, e.code]"
	out, _ := run(t, src, "", limits.Limits{MaxToolCalls: 1})
	if out.Err != nil || string(out.Result) != `["ToolCallLimitError","tool_call_limit"]` {
		t.Fatalf("outcome %s %v", out.Result, out.Err)
	}
}

// TestConcurrencyLimit: gathered calls never run more than
// max_concurrent_tool_calls at once, and all of them complete.
func TestConcurrencyLimit(t *testing.T) {
	var mu sync.Mutex
	inflight, peak := 0, 0
	gate := tools.Tool{Definition: tools.Definition{Name: "gate"}, Handler: func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
		mu.Lock()
		inflight++
		peak = max(peak, inflight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inflight--
			mu.Unlock()
		}()
		return json.RawMessage(`1`), nil
	}}
	out, _ := run(t, "r = await gather(*[tools.gate() for _ in range(8)])\nreturn sum(r)", "", limits.Limits{MaxConcurrentToolCalls: 2}, gate)
	if out.Err != nil || string(out.Result) != "8" {
		t.Fatalf("outcome %s %v", out.Result, out.Err)
	}
	if peak > 2 {
		t.Fatalf("%d calls ran at once, more than the limit of 2", peak)
	}
}

// TestLogLimits: logs past max_log_bytes or max_log_entries are cut and
// marked truncated; the execution goes on.
func TestLogLimits(t *testing.T) {
	cases := []struct {
		name string
		lim  limits.Limits
	}{
		{name: "bytes", lim: limits.Limits{MaxLogBytes: 2000}},
		{name: "entries", lim: limits.Limits{MaxLogEntries: 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, _ := job("for i in range(1000):\n    print('line', i)\nreturn 1", "", c.lim, testTools(t))
			out := engine(t).Run(context.Background(), j)
			if out.Err != nil || string(out.Result) != "1" {
				t.Fatalf("outcome %s %v", out.Result, out.Err)
			}
			logs, truncated := j.Logs.Entries()
			if !truncated || len(logs) == 0 || len(logs) >= 1000 {
				t.Fatalf("%d log entries, truncated %v", len(logs), truncated)
			}
		})
	}
}
