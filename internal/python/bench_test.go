package python

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/limits"
)

// benchRun runs src b.N times and reports the guest's CPU time per run
// and the median wall time of a run.
// With ready, each run waits (untimed) for an interpreter started ahead
// of it: the latency of a request the pool keeps up with. Without, runs
// follow each other as fast as they can, the pool refilling beside them.
func benchRun(b *testing.B, src string, ready bool) {
	e := engine(b)
	ts := testTools(b)
	var ex []byte
	if src == "" {
		var err error
		ex, err = os.ReadFile(filepath.Join("..", "..", "examples", "expenses.py"))
		if err != nil {
			b.Fatal(err)
		}
		src = string(ex)
		ts = demoTools(b)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu, peak int64
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		j, _ := job(src, "", limits.Limits{}, ts)
		if ready {
			b.StopTimer()
			waitWarm(b, e, 1)
			b.StartTimer()
		}
		t0 := time.Now()
		out := e.Run(context.Background(), j)
		lat = append(lat, time.Since(t0))
		if out.Err != nil {
			b.Fatal(out.Err)
		}
		cpu += int64(out.CPUTime)
		peak = max(peak, out.PeakMemoryBytes)
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
}

// BenchmarkTrivial is the smallest execution: a fresh interpreter, the
// prelude, `return 1`.
func BenchmarkTrivial(b *testing.B) { benchRun(b, "return 1", false) }

// BenchmarkTrivialReady is BenchmarkTrivial on an interpreter started
// ahead of each run.
func BenchmarkTrivialReady(b *testing.B) { benchRun(b, "return 1", true) }

// BenchmarkCalls100 awaits 100 calls one after the other; compare with
// BenchmarkTrivial for the cost of one awaited call.
func BenchmarkCalls100(b *testing.B) {
	benchRun(b, calls100, false)
}

// BenchmarkCalls100Ready is BenchmarkCalls100 on an interpreter started
// ahead of each run.
func BenchmarkCalls100Ready(b *testing.B) { benchRun(b, calls100, true) }

const calls100 = "for i in range(100):\n    await tools.echo(i=i)\nreturn 1"

// BenchmarkExpense runs examples/expenses.py against the demo tools (26
// calls, 200 KB of JSON from the tools).
func BenchmarkExpense(b *testing.B) { benchRun(b, "", false) }

// BenchmarkExpenseReady is BenchmarkExpense on an interpreter started
// ahead of each run.
func BenchmarkExpenseReady(b *testing.B) { benchRun(b, "", true) }
