package ptc_test

import (
	"context"
	"os"
	"testing"

	"github.com/ptcrun/ptc"
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
		if err != nil || res.Error != nil {
			b.Fatal(err, res.Error)
		}
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
		if err != nil || res.Error != nil {
			b.Fatal(err, res.Error)
		}
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
		if err != nil || res.Error != nil {
			b.Fatal(err, res.Error)
		}
	}
}
