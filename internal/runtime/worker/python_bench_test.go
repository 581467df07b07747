package worker

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/limits"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// benchPython runs src (examples/expenses.py against the demo tools when
// empty) b.N times in a worker with two interpreters kept started ahead,
// after an untimed first run that makes the worker's Python engine. gap,
// when set, is an untimed pause before each run in which the worker
// starts the interpreter the last run took: the latency of a request the
// worker keeps up with. It reports the guest's CPU per run, the median
// wall time and the host's load average over the last minute.
func benchPython(b *testing.B, src string, gap time.Duration) {
	in := pythonInterpreter(b, 2)
	p := newPool(b, Config{Workers: 1, MaxWorkers: 1})
	ts := testTools(b)
	if src == "" {
		ex, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "expenses.py"))
		if err != nil {
			b.Fatal(err)
		}
		src = string(ex)
		ts = nil
		for _, tool := range demo.Tools() {
			c, err := tools.Compile(tool)
			if err != nil {
				b.Fatal(err)
			}
			ts = append(ts, c)
		}
	}
	job := func() *ptcruntime.Job {
		l := limits.Defaults()
		l.MaxToolCalls = 1000
		d := bridge.New(bridge.Config{ExecutionID: "bench", Tools: ts, MaxCalls: l.MaxToolCalls, MaxConcurrent: l.MaxConcurrentToolCalls})
		return &ptcruntime.Job{ExecutionID: "bench", Language: core.LanguagePython, Source: src, Limits: l, Tools: d}
	}
	if out := p.RunPython(context.Background(), job(), in); out.Err != nil {
		b.Fatal(out.Err)
	}
	b.ResetTimer()
	var cpu int64
	lat := make([]time.Duration, 0, b.N)
	for range b.N {
		if gap > 0 {
			b.StopTimer()
			time.Sleep(gap)
			b.StartTimer()
		}
		t0 := time.Now()
		out := p.RunPython(context.Background(), job(), in)
		lat = append(lat, time.Since(t0))
		if out.Err != nil {
			b.Fatal(out.Err)
		}
		cpu += int64(out.CPUTime)
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f, err := strconv.ParseFloat(strings.Fields(string(l))[0], 64); err == nil {
			b.ReportMetric(f, "load1")
		}
	}
}

// BenchmarkPythonTrivial is `return 1` in a worker, runs back to back
// (the worker refilling its warm interpreters beside them).
func BenchmarkPythonTrivial(b *testing.B) { benchPython(b, "return 1", 0) }

// BenchmarkPythonTrivialWarm is BenchmarkPythonTrivial with a pause
// before each run, so that it takes an interpreter started ahead.
func BenchmarkPythonTrivialWarm(b *testing.B) { benchPython(b, "return 1", 300*time.Millisecond) }

// BenchmarkPythonCalls100Warm awaits 100 calls one after the other, each
// crossing to the supervisor; compare with BenchmarkPythonTrivialWarm for
// the cost of one call.
func BenchmarkPythonCalls100Warm(b *testing.B) {
	benchPython(b, "for i in range(100):\n    await tools.echo(i=i)\nreturn 1", 300*time.Millisecond)
}

// BenchmarkPythonExpenseWarm runs examples/expenses.py against the demo
// tools (26 calls) on an interpreter started ahead.
func BenchmarkPythonExpenseWarm(b *testing.B) { benchPython(b, "", 300*time.Millisecond) }
