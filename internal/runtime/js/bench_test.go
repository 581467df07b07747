package js_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

func benchJob(b *testing.B, src string) func() *runtime.Outcome {
	e := js.New()
	ts := testTools(b)
	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	return func() *runtime.Outcome {
		d := bridge.New(bridge.Config{ExecutionID: "b", Tools: ts, MaxCalls: lim.MaxToolCalls, MaxConcurrent: lim.MaxConcurrentToolCalls})
		return e.Run(context.Background(), &runtime.Job{Source: src, Input: json.RawMessage("null"), Limits: lim, Tools: d,
			Logs: runtime.NewLogBuffer(time.Now(), lim, nil)})
	}
}

// BenchmarkTrivial measures one complete execution of `return {ok: 1}`
// with a cached program: new runtime, bindings, run, JSON result.
func BenchmarkTrivial(b *testing.B) {
	run := benchJob(b, `return {ok: 1}`)
	b.ReportAllocs()
	for b.Loop() {
		if out := run(); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}

// BenchmarkAwaitedCall measures ptc's cost per awaited tool call, schema
// validation included: 100 sequential calls per execution to a tool whose
// handler returns its (validated) arguments, so the tool itself costs
// nothing. The tool is Inline: it runs on the script's goroutine when the
// script waits for nothing else.
func BenchmarkAwaitedCall(b *testing.B) {
	benchCalls(b, "ident")
}

// BenchmarkAwaitedCallGoroutine is BenchmarkAwaitedCall with a tool that is
// not Inline: each call runs on its own goroutine.
func BenchmarkAwaitedCallGoroutine(b *testing.B) {
	benchCalls(b, "identGo")
}

func benchCalls(b *testing.B, tool string) {
	run := benchJob(b, `let s = 0; for (let i = 0; i < 100; i++) { s += (await tools.`+tool+`({a: i, b: 1})).a; } return s`)
	b.ReportAllocs()
	for b.Loop() {
		if out := run(); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100/1000, "µs/call")
}

// BenchmarkTrivialProperty is BenchmarkTrivial with a property read: code
// that can reach the built-ins of values, which then count their calls
// (builtins.go).
func BenchmarkTrivialProperty(b *testing.B) {
	run := benchJob(b, `const o = {ok: 1}; return {ok: o.ok}`)
	b.ReportAllocs()
	for b.Loop() {
		if out := run(); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}

// benchWarm is benchJob on an engine that keeps runtimes made ahead
// (WithWarmRuntimes), each run in one made before its timer starts (and
// none made while it runs): the cost on an execution's path when
// executions come further apart than a runtime takes to make.
func benchWarm(b *testing.B, src string, calls int) {
	e := js.New(js.WithWarmRuntimes(1))
	js.NoRefill(e)
	ts := testTools(b)
	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		js.FillWarm(e, src)
		d := bridge.New(bridge.Config{ExecutionID: "b", Tools: ts, MaxCalls: lim.MaxToolCalls, MaxConcurrent: lim.MaxConcurrentToolCalls})
		job := &runtime.Job{Source: src, Input: json.RawMessage("null"), Limits: lim, Tools: d, Logs: runtime.NewLogBuffer(time.Now(), lim, nil)}
		b.StartTimer()
		if out := e.Run(context.Background(), job); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
	if calls > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(calls)/1000, "µs/call")
	}
}

// BenchmarkTrivialWarm is BenchmarkTrivial in a runtime made ahead.
func BenchmarkTrivialWarm(b *testing.B) { benchWarm(b, `return {ok: 1}`, 0) }

// BenchmarkAwaitedCallWarm is BenchmarkAwaitedCall in a runtime made ahead.
func BenchmarkAwaitedCallWarm(b *testing.B) {
	benchWarm(b, `let s = 0; for (let i = 0; i < 100; i++) { s += (await tools.ident({a: i, b: 1})).a; } return s`, 100)
}
