package wasm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// TestCancelledWhileCallingTools: an execution cancelled while its guest
// waits for a tool ends CANCELLED whatever the guest does next — it may
// finish normally, or call again (a call that is not made nor counted).
func TestCancelledWhileCallingTools(t *testing.T) {
	cases := []struct {
		name string
		body func(f abiFuncs) [][]byte
	}{
		{"finishes normally", func(f abiFuncs) [][]byte {
			return append([][]byte{i32c(100), i32c(4), i32c(120), i32c(2), i32c(0), call(f.call), opDrop}, printPayload(f)...)
		}},
		{"calls again", func(f abiFuncs) [][]byte {
			return append([][]byte{
				i32c(100), i32c(4), i32c(120), i32c(2), i32c(0), call(f.call), opDrop,
				i32c(110), i32c(4), i32c(120), i32c(2), i32c(0), call(f.call), opDrop,
			}, printPayload(f)...)
		}},
		{"calls a batch", func(f abiFuncs) [][]byte {
			return append([][]byte{
				i32c(100), i32c(4), i32c(120), i32c(2), i32c(0), call(f.call), opDrop,
				i32c(140), i32c(17), i32c(0), call(f.batch), opDrop,
			}, printPayload(f)...)
		}},
	}
	for _, cfg := range []Config{{}, {NoLoopChecks: true}} {
		e := newEngine(t, cfg)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				stop := tools.Tool{Definition: tools.Definition{Name: "stop"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
					cancel() // the caller cancels while the call runs
					<-ctx.Done()
					return nil, ctx.Err()
				}}
				mod := abiModule(true, map[int32]string{16: "\x2c\x01\x00\x00", 100: "stop", 110: "echo", 120: `{}`, 140: `[{"tool":"echo"}]`}, c.body)
				j, d := job(mod, "", limits.Limits{}, testTools(t, stop))
				out := e.Run(ctx, j)
				if out.Err == nil || out.Err.Kind != fault.KindCancelled {
					t.Fatalf("%s %v, want CANCELLED", out.Result, out.Err)
				}
				if d.Calls() != 1 {
					t.Fatalf("%d calls counted, want 1", d.Calls())
				}
			})
		}
	}
}
