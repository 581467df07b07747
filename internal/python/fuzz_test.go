package python

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// FuzzProtocol feeds arbitrary bytes to the host's side of the protocol,
// as a script writing to fd 1 could: it never panics, a line is a frame
// or ends the execution, and a kept result is valid JSON.
func FuzzProtocol(f *testing.F) {
	for _, s := range []string{
		`{"c":1,"n":"echo","a":{"x":1.0}}` + "\n",
		`{"l":"info","m":"hi"}` + "\n" + `{"r":[1,2.0,"3.0"]}` + "\n",
		`{"e":{"type":"ValueError","message":"ValueError: x","line":3}}` + "\n",
		`{"s":2,"q":"echo","k":3}` + "\n" + `{"d":3,"n":"nope"}` + "\n",
		`{"r":` + "\n", `garbage` + "\n", `{"r":"\ud800"}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		lim := limits.Limits{MaxOutputBytes: 1 << 10, MaxToolCalls: 4}
		d := bridge.New(bridge.Config{ExecutionID: "f", MaxCalls: 4})
		job := &runtime.Job{Limits: lim, Tools: d, Logs: runtime.NewLogBuffer(time.Now(), lim, nil)}
		s := newSession(nil)
		s.attach(job, d, cancel)
		s.open(ctx, wasm.Meter{CPU: func() time.Duration { return 0 }, Peak: func() int64 { return 0 }})
		s.begin()
		_, _ = writer{s}.Write(b)
		cancel(nil)
		s.calls.Wait()
		out := &runtime.Outcome{}
		s.finish(out)
		if out.Err == nil && !json.Valid(out.Result) {
			t.Fatalf("kept a result that is not JSON: %q", out.Result)
		}
		_ = integralFloats(b)
	})
}
