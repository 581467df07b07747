package python

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/cpuclock"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// inline makes t an inline tool (tools.Tool.Inline).
func inline(t tools.Tool) tools.Tool {
	t.Inline = true
	return t
}

// TestInlineCalls: calls to inline tools run on the guest's goroutine when
// the guest waits for nothing else — their CPU time not charged to the
// script — and on goroutines of their own when they are gathered, or left
// unawaited at the end.
func TestInlineCalls(t *testing.T) {
	// burn computes for a quarter of a second of its thread's CPU time:
	// on the guest's thread when it runs inline.
	burn := inline(tools.Tool{Definition: tools.Definition{Name: "burn"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c := cpuclock.Thread()
		for t0 := c.Now(); c.Now()-t0 < 250*time.Millisecond; {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		return json.RawMessage(`"burnt"`), nil
	}})
	var live atomic.Int32
	mark := inline(tools.Tool{Definition: tools.Definition{Name: "mark"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		if ctx.Err() == nil {
			live.Add(1)
		}
		return json.RawMessage(`1`), nil
	}})
	b := barrierTool(2)
	for _, tc := range []struct {
		name  string
		src   string
		extra []tools.Tool
		lim   limits.Limits
		want  string
	}{
		{name: "awaited one after the other", src: "s = 0\nfor i in range(20):\n    s += (await tools.twin(i=i))['i']\nreturn s",
			extra: []tools.Tool{inline(tools.Tool{Definition: tools.Definition{Name: "twin"}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
				return c.Arguments, nil
			}})}, want: "190"},
		{name: "its CPU time is the tool's", src: "return [await tools.burn(), await tools.burn()]", extra: []tools.Tool{burn},
			lim: limits.Limits{CPUTime: 300 * time.Millisecond}, want: `["burnt","burnt"]`},
		{name: "gathered calls run together", src: "import asyncio\nr = await asyncio.gather(tools.barrier(), tools.barrier())\nreturn len(r)",
			extra: []tools.Tool{inline(b)}, lim: limits.Limits{Timeout: time.Minute}, want: "2"},
		{name: "a call never awaited ends with the execution", src: "tools.mark()\nreturn 0", extra: []tools.Tool{mark}, want: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, d := job(tc.src, "", tc.lim, testTools(t, tc.extra...))
			// On an interpreter started ahead: the CPU limit then counts
			// the script, not CPython's start (which a loaded machine, or
			// the race detector, can stretch past it).
			e := engine(t)
			waitWarm(t, e, 1)
			out := e.Run(context.Background(), j)
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if string(out.Result) != tc.want {
				t.Fatalf("result %s, want %s", out.Result, tc.want)
			}
			if tc.lim.CPUTime > 0 && out.CPUTime >= tc.lim.CPUTime {
				t.Fatalf("CPU time %v charged to the script", out.CPUTime)
			}
			if tc.name == "a call never awaited ends with the execution" {
				// It ran once the execution had ended (Run waited for
				// it), with the execution's context ended: its handler,
				// if it was reached, could tell.
				tr := d.Trace()
				if len(tr) != 1 || !tr[0].OK && tr[0].ErrorCode != "cancelled" || live.Load() != 0 {
					t.Fatalf("trace %+v, %d calls with a live context", tr, live.Load())
				}
			}
		})
	}
}
