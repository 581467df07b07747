package wasm

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// BenchmarkCompile measures compiling the Go example guest (minimal, about
// 2 MB): cold, and loaded from a compilation cache directory.
func BenchmarkCompile(b *testing.B) {
	mod := guest(b, "minimal")
	b.Run("go-guest/cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := e.Compile(context.Background(), mod); err != nil {
				b.Fatal(err)
			}
			_ = e.Close(context.Background())
		}
	})
	b.Run("go-guest/dir-cache", func(b *testing.B) {
		dir := b.TempDir()
		warm, err := New(Config{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := warm.Compile(context.Background(), mod); err != nil {
			b.Fatal(err)
		}
		_ = warm.Close(context.Background())
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			e, err := New(Config{CacheDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := e.Compile(context.Background(), mod); err != nil {
				b.Fatal(err)
			}
			_ = e.Close(context.Background())
		}
	})
}

// BenchmarkRun measures executions of cached modules and reports the median
// as p50-ns besides the mean.
func BenchmarkRun(b *testing.B) {
	var demoTools []*tools.Compiled
	for _, t := range demo.Tools() {
		c, err := tools.Compile(t)
		if err != nil {
			b.Fatal(err)
		}
		demoTools = append(demoTools, c)
	}
	cases := []struct {
		name   string
		module func(testing.TB) []byte
		input  string
		tools  []*tools.Compiled
		byHash bool
	}{
		{"tiny", func(testing.TB) []byte { return writeModule(`{"answer":42}`) }, "", nil, false},
		{"go-minimal", func(tb testing.TB) []byte { return guest(tb, "minimal") }, `{"x":1}`, nil, false},
		// By hash, the 2 MB module is not hashed again on every run.
		{"go-minimal/by-hash", func(tb testing.TB) []byte { return guest(tb, "minimal") }, `{"x":1}`, nil, true},
		{"go-expenses", func(tb testing.TB) []byte { return guest(tb, "expenses") }, "", demoTools, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			e := newEngine(b)
			mod := tc.module(b)
			hash, err := e.Compile(context.Background(), mod)
			if err != nil {
				b.Fatal(err)
			}
			ts := tc.tools
			if ts == nil {
				ts = testTools(b)
			}
			times := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j, _ := job(mod, tc.input, limits.Limits{}, ts)
				start := time.Now()
				var out *runtime.Outcome
				if tc.byHash {
					var err error
					if out, err = e.RunHash(context.Background(), hash, j); err != nil {
						b.Fatal(err)
					}
				} else {
					out = e.Run(context.Background(), j)
				}
				times = append(times, time.Since(start))
				if out.Err != nil {
					b.Fatal(out.Err)
				}
			}
			b.StopTimer()
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
		})
	}
}

// BenchmarkTightLoop runs 50 million iterations of a compute loop in a Go
// guest with and without the per-loop termination checks that
// WithCloseOnContextDone compiles in (see Config.NoLoopChecks).
func BenchmarkTightLoop(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"with-loop-checks", Config{}},
		{"without-loop-checks", Config{NoLoopChecks: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEngine(b, tc.cfg)
			mod := guest(b, "loop")
			if _, err := e.Compile(context.Background(), mod); err != nil {
				b.Fatal(err)
			}
			ts := testTools(b)
			for b.Loop() {
				j, _ := job(mod, `{"n":50000000}`, limits.Limits{Timeout: time.Minute, CPUTime: time.Minute}, ts)
				if out := e.Run(context.Background(), j); out.Err != nil {
					b.Fatal(out.Err)
				}
			}
		})
	}
}

// TestWithoutLoopChecksStillLimited: without loop checks a guest that calls
// the host still sees limits, and a bounded loop finishes with the same
// result as with the checks.
func TestWithoutLoopChecksSameResult(t *testing.T) {
	mod := guest(t, "loop")
	var results []string
	for _, cfg := range []Config{{}, {NoLoopChecks: true}} {
		e := newEngine(t, cfg)
		j, _ := job(mod, `{"n":1000}`, limits.Limits{}, testTools(t))
		out := e.Run(context.Background(), j)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		results = append(results, string(out.Result))
	}
	if results[0] != results[1] {
		t.Fatalf("results differ: %v", results)
	}
}
