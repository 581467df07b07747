package worker

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
)

// BenchmarkMemoryBreach measures how long a memory breach inside a
// built-in goja cannot interrupt takes to be enforced in worker mode: the
// script logs a marker, then makes one native call that allocates far past
// its 64 MiB limit. It reports, at p50 and worst: detect, from the marker
// reaching the supervisor to the worker's breach report (the built-in's
// own work up to the limit, then the watchdog's detection); enforce, from
// the breach report to the execution's outcome (MEMORY_LIMIT); and total.
func BenchmarkMemoryBreach(b *testing.B) {
	for _, c := range []struct{ name, src string }{
		{"json-parse", `const s = "[" + "1,".repeat(1e7) + "1]"; console.log("go"); return JSON.parse(s).length`},
		{"split", `const s = "x".repeat(2 ** 24); console.log("go"); return s.split("").length`},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := newPool(b, Config{Workers: 1})
			var mu sync.Mutex
			var marked, breached time.Time
			p.breachSeen = func() {
				mu.Lock()
				breached = time.Now()
				mu.Unlock()
			}
			l := testLimits()
			l.MemoryBytes = 64 << 20
			l.Timeout, l.CPUTime = time.Minute, time.Minute
			var detect, enforce, total []time.Duration
			for i := 0; i < b.N; i++ {
				mu.Lock()
				marked, breached = time.Time{}, time.Time{}
				mu.Unlock()
				job, _ := newJob(b, c.src, l)
				job.Logs = ptcruntime.NewLogBuffer(time.Now(), l, func(core.LogEntry) {
					mu.Lock()
					marked = time.Now()
					mu.Unlock()
				})
				out := p.Run(context.Background(), job)
				end := time.Now()
				if out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
					b.Fatalf("outcome %s %v, want MEMORY_LIMIT", out.Result, out.Err)
				}
				mu.Lock()
				if !marked.IsZero() && !breached.IsZero() {
					detect = append(detect, breached.Sub(marked))
					enforce = append(enforce, end.Sub(breached))
					total = append(total, end.Sub(marked))
				}
				mu.Unlock()
			}
			b.StopTimer()
			report(b, "detect", detect)
			report(b, "enforce", enforce)
			report(b, "total", total)
		})
	}
}

// report reports the p50 and the worst of ds in milliseconds.
func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Milliseconds()), name+"-p50-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Milliseconds()), name+"-max-ms")
}
