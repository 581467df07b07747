package ptc_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

func newDemoRunner(tb testing.TB) *ptc.Runner {
	tb.Helper()
	r, err := ptc.NewRunner(ptc.WithTools(demo.Tools()...))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// BenchmarkExpenseWorkload runs examples/expenses.js in-process: 26 tool
// calls, about 200 KB of JSON from the tools, 571 bytes returned.
func BenchmarkExpenseWorkload(b *testing.B) {
	src, err := os.ReadFile("examples/expenses.js")
	if err != nil {
		b.Fatal(err)
	}
	r := newDemoRunner(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Execute(ctx, ptc.Request{Source: string(src)})
		succeeded(b, res, err)
	}
}

// BenchmarkTrivialExecute is one in-process execution of `return {ok: 1}`
// through the whole Runner (checks, bridge, engine, result).
func BenchmarkTrivialExecute(b *testing.B) {
	r := newDemoRunner(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Execute(ctx, ptc.Request{Source: `return {ok: 1}`})
		succeeded(b, res, err)
	}
}

// BenchmarkTrivialExecuteTypeScript is BenchmarkTrivialExecute in
// TypeScript: the transpiled program comes from the cache.
func BenchmarkTrivialExecuteTypeScript(b *testing.B) {
	r := newDemoRunner(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Execute(ctx, ptc.Request{Language: ptc.LanguageTypeScript, Source: `const ok: number = 1; return {ok}`})
		succeeded(b, res, err)
	}
}

// BenchmarkAwaitedCallExecute is one in-process execution of 100
// sequential awaited calls to an echo tool through the whole Runner, as
// cmd/ptc-peerbench's chain workload: µs/call is the execution's time
// over its 100 calls (the execution's own cost included).
func BenchmarkAwaitedCallExecute(b *testing.B) {
	r, err := ptc.NewRunner(ptc.WithTools(tools.Tool{
		Definition: tools.Definition{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler:    func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil },
		Inline:     true,
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	src := "let s = 0;\nfor (let i = 0; i < 100; i++) { const r = await tools.echo({i}); s += r.i; }\nreturn {sum: s};"
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Execute(ctx, ptc.Request{Source: src})
		if succeeded(b, res, err); string(res.Result) != `{"sum":4950}` {
			b.Fatal(string(res.Result))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100/1000, "µs/call")
}
