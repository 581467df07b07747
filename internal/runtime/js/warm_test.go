package js_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// TestWarm runs jobs in runtimes made before them and checks that each
// gives what the same job gives in a runtime made at its start
// (RunSource): the job's limits, determinism and guards hold although the
// runtime was made without them, and a warm runtime runs one job only.
func TestWarm(t *testing.T) {
	e := js.New()
	job := func(src string, mem int64, det bool) *runtime.Job {
		lim := limits.DefaultPolicy().Resolve(limits.Limits{MemoryBytes: mem}, limits.Limits{})
		j := &runtime.Job{ExecutionID: "w", Source: src, Input: json.RawMessage(`{"n":2}`), Limits: lim,
			Tools: bridge.New(bridge.Config{Tools: testTools(t), MaxConcurrent: 1}), Logs: runtime.NewLogBuffer(time.Now(), lim, nil)}
		if det {
			j.Determinism = core.Determinism{Deterministic: true, Seed: 7, ClockStart: time.Unix(1e9, 0)}
		}
		return j
	}
	cases := []struct {
		name string
		src  string
		mem  int64
		det  bool
		// want is the result; kind the error kind when it fails.
		want string
		kind fault.Kind
	}{
		{name: "input and a tool call", src: `return [input.n, await tools.add({a: 1, b: 2})]`, want: `[2,3]`},
		{name: "determinism set after the runtime was made", det: true,
			src: `return [Math.random(), Date.now()]`},
		{name: "string guard reads the job's memory limit", mem: 1 << 20,
			src: `try { "ab".repeat(1e6); return "built" } catch (e) { return e.name }`, want: `"RangeError"`},
		{name: "array guard reads the job's memory limit", mem: 1 << 20,
			src: `try { new Array(1e6).join("abc"); return "built" } catch (e) { return e.name }`, want: `"RangeError"`},
		{name: "guards a program needs are installed at bind", mem: 1 << 20,
			src: `try { JSON.parse("[".repeat(5000) + "]".repeat(5000)); return "parsed" } catch (e) { return e.name }`},
		{name: "syntax error", src: `return (`, kind: fault.KindSyntax},
		{name: "a thrown error", src: `throw new TypeError("no")`, kind: fault.KindScript},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, err := e.Warm()
			if err != nil {
				t.Fatal(err)
			}
			got := run(context.Background(), job(c.src, c.mem, c.det), js.Source{Code: c.src})
			ref := e.RunSource(context.Background(), job(c.src, c.mem, c.det), js.Source{Code: c.src})
			if string(got.Result) != string(ref.Result) || (got.Err == nil) != (ref.Err == nil) ||
				(got.Err != nil && (got.Err.Kind != ref.Err.Kind || got.Err.Message != ref.Err.Message)) {
				t.Fatalf("warm %s %v, made at the start %s %v", got.Result, got.Err, ref.Result, ref.Err)
			}
			if c.want != "" && string(got.Result) != c.want {
				t.Fatalf("got %s %v, want %s", got.Result, got.Err, c.want)
			}
			if c.kind != fault.KindUnspecified && (got.Err == nil || got.Err.Kind != c.kind) {
				t.Fatalf("got %v, want %v", got.Err, c.kind)
			}
		})
	}
	t.Run("one job per runtime", func(t *testing.T) {
		run, err := e.Warm()
		if err != nil {
			t.Fatal(err)
		}
		src := `const seen = typeof globalThis.mark; globalThis.mark = 1; return seen`
		for i := range 2 {
			out := run(context.Background(), job(src, 0, false), js.Source{Code: src})
			if out.Err != nil || string(out.Result) != `"undefined"` {
				t.Fatalf("run %d: %s %v", i, out.Result, out.Err)
			}
		}
	})
}

// TestWarmRuntimes runs jobs on an engine that keeps runtimes made ahead
// (WithWarmRuntimes) and checks that each execution gets a fresh runtime
// — what one execution leaves in its global object, another never sees —
// and the same outcome as on an engine that makes each runtime at the
// start of its job, whichever program's guard groups the runtime was
// made with.
func TestWarmRuntimes(t *testing.T) {
	warm, cold := js.New(js.WithWarmRuntimes(2)), js.New()
	job := func(src string) *runtime.Job {
		lim := limits.DefaultPolicy().Resolve(limits.Limits{MemoryBytes: 1 << 20}, limits.Limits{})
		return &runtime.Job{ExecutionID: "w", Source: src, Input: json.RawMessage(`{"n":2}`), Limits: lim,
			Tools: bridge.New(bridge.Config{Tools: testTools(t), MaxConcurrent: 1}), Logs: runtime.NewLogBuffer(time.Now(), lim, nil)}
	}
	cases := []struct {
		name, src string
	}{
		{"trivial", `return {ok: 1}`},
		{"marks the global object", `const seen = typeof globalThis.mark; globalThis.mark = 1; return seen`},
		{"changes a built-in", `const seen = typeof Array.prototype.extra; Array.prototype.extra = 1; return seen`},
		{"tool call", `return [input.n, await tools.add({a: 1, b: 2})]`},
		{"string guard", `try { "ab".repeat(1e6); return "built" } catch (e) { return e.name }`},
		{"JSON guard", `try { JSON.parse("[".repeat(5000) + "]".repeat(5000)); return "parsed" } catch (e) { return e.name }`},
		{"global names", `return Object.getOwnPropertyNames(globalThis).join()`},
		{"thrown", `throw new TypeError("no")`},
		{"AsyncFunction nesting", `try { Object.getPrototypeOf(async function () {}).constructor("return " + "[".repeat(5000) + "]".repeat(5000)); return "compiled" } catch (e) { return e.name }`},
		{"AsyncFunction shape", `try { (async function () {}).constructor("}); globalThis.leak = 1; (async function () {") } catch (e) { return [e.name, typeof globalThis.leak] } return typeof globalThis.leak`},
		{"Promise", `return [typeof Promise, String(Promise), await Promise.resolve(3)]`},
	}
	// Each program runs in a runtime made ahead for every program.
	for _, ahead := range cases {
		for _, c := range cases {
			js.FillWarm(warm, ahead.src)
			got := warm.RunSource(context.Background(), job(c.src), js.Source{Code: c.src})
			ref := cold.RunSource(context.Background(), job(c.src), js.Source{Code: c.src})
			if string(got.Result) != string(ref.Result) || (got.Err == nil) != (ref.Err == nil) ||
				(got.Err != nil && (got.Err.Kind != ref.Err.Kind || got.Err.Message != ref.Err.Message)) {
				t.Fatalf("%s: warm %s %v, made at the start %s %v", c.name, got.Result, got.Err, ref.Result, ref.Err)
			}
		}
	}
}
