package js_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/runtime"
	"github.com/ptcrun/ptc/runtime/js"
)

// TestWarm runs jobs in runtimes made before them: what the maker's
// prepare did is there, the job's limits hold although the runtime was
// made without them, and a Warm runs one job only.
func TestWarm(t *testing.T) {
	e := js.New()
	job := func(src string, mem int64) *runtime.Job {
		lim := limits.DefaultPolicy().Resolve(limits.Limits{MemoryBytes: mem}, limits.Limits{})
		return &runtime.Job{ExecutionID: "w", Source: src, Input: json.RawMessage(`{"n":2}`), Limits: lim,
			Tools: bridge.New(bridge.Config{Tools: testTools(t), MaxConcurrent: 1}), Logs: runtime.NewLogBuffer(time.Now(), lim, nil)}
	}
	mark := func(vm *goja.Runtime) error { return vm.Set("prepared", true) }
	run, err := e.Warm(mark)
	if err != nil {
		t.Fatal(err)
	}
	src := `return [typeof prepared, input.n, (await tools.add({a: 1, b: 2}))]`
	out := run(context.Background(), job(src, 0), js.Source{Code: src})
	if out.Err != nil || string(out.Result) != `["boolean",2,3]` {
		t.Fatalf("warm run: %s %v", out.Result, out.Err)
	}
	// Used up: the next run gets a runtime of its own.
	out = run(context.Background(), job(src, 0), js.Source{Code: src})
	if out.Err != nil || string(out.Result) != `["undefined",2,3]` {
		t.Fatalf("second run with a used Warm: %s %v", out.Result, out.Err)
	}
	// The string guards read the job's memory limit, set after the
	// runtime was made.
	run, err = e.Warm(nil)
	if err != nil {
		t.Fatal(err)
	}
	src = `try { "ab".repeat(1e6); return "built" } catch (e) { return e.name }`
	out = run(context.Background(), job(src, 1<<20), js.Source{Code: src})
	if out.Err != nil || string(out.Result) != `"RangeError"` {
		t.Fatalf("guard under a 1 MiB limit: %s %v", out.Result, out.Err)
	}
	// A prepare that fails or panics gives no runtime.
	if _, err := e.Warm(func(*goja.Runtime) error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panicking prepare: %v", err)
	}
}
