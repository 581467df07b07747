package worker

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"

	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// p50 reports the median of ds as the "p50-µs" metric.
func reportP50(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/1e3, "p99-µs")
}

func benchTrivial(b *testing.B, eng ptcruntime.Engine) {
	ds := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		job, _ := newJob(b, `return input.n + 1`, testLimits())
		start := time.Now()
		out := eng.Run(ctx, job)
		ds = append(ds, time.Since(start))
		if out.Err != nil {
			b.Fatal(out.Err)
		}
	}
	b.StopTimer()
	reportP50(b, ds)
}

// BenchmarkTrivial compares a trivial execution in-process (the plain
// JavaScript engine), in a pool in in-process mode and on a worker.
func BenchmarkTrivial(b *testing.B) {
	b.Run("engine=js", func(b *testing.B) { benchTrivial(b, js.New()) })
	b.Run("engine=inprocess", func(b *testing.B) { benchTrivial(b, newPool(b, Config{Mode: ModeInProcess})) })
	b.Run("engine=worker", func(b *testing.B) { benchTrivial(b, newPool(b, Config{})) })
}

// BenchmarkToolCall measures an execution that makes one tool call.
func BenchmarkToolCall(b *testing.B) {
	run := func(b *testing.B, eng ptcruntime.Engine) {
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			job, _ := newJob(b, `return (await tools.math.add({a: 1, b: 2})).sum`, testLimits())
			start := time.Now()
			if out := eng.Run(context.Background(), job); out.Err != nil {
				b.Fatal(out.Err)
			}
			ds = append(ds, time.Since(start))
		}
		b.StopTimer()
		reportP50(b, ds)
	}
	b.Run("engine=js", func(b *testing.B) { run(b, js.New()) })
	b.Run("engine=worker", func(b *testing.B) { run(b, newPool(b, Config{})) })
}

// BenchmarkAwaitedCall measures the cost of one awaited tool call: each
// execution awaits 100 calls in sequence; "per-call-µs" is the median
// execution over 100 (the script's loop and the execution's own cost
// included, as compare-peers counts them).
func BenchmarkAwaitedCall(b *testing.B) {
	const calls = 100
	run := func(b *testing.B, eng ptcruntime.Engine) {
		src := fmt.Sprintf(`let s = 0; for (let i = 0; i < %d; i++) s += (await tools.math.add({a: i, b: 1})).sum; return s`, calls)
		ds := make([]time.Duration, 0, b.N/calls+1)
		for i := 0; i < b.N; i += calls {
			job, _ := newJob(b, src, testLimits())
			start := time.Now()
			if out := eng.Run(context.Background(), job); out.Err != nil {
				b.Fatal(out.Err)
			}
			ds = append(ds, time.Since(start))
		}
		b.StopTimer()
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3/calls, "per-call-µs")
	}
	b.Run("engine=js", func(b *testing.B) { run(b, js.New()) })
	b.Run("engine=worker", func(b *testing.B) { run(b, newPool(b, Config{})) })
}

// BenchmarkThroughput runs trivial executions from 16 concurrent callers.
func BenchmarkThroughput(b *testing.B) {
	run := func(b *testing.B, eng ptcruntime.Engine) {
		b.SetParallelism(8) // 8 × GOMAXPROCS(2) = 16 callers
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				job, _ := newJob(b, `let s = 0; for (let i = 0; i < 100; i++) s += i; return s`, testLimits())
				if out := eng.Run(context.Background(), job); out.Err != nil {
					b.Error(out.Err)
					return
				}
			}
		})
	}
	b.Run("engine=js/callers=16", func(b *testing.B) { run(b, js.New()) })
	b.Run("engine=worker/callers=16", func(b *testing.B) { run(b, newPool(b, Config{Workers: 2, MaxWorkers: 16})) })
}

// BenchmarkSpawn measures starting a worker process with and without a
// private network namespace.
func BenchmarkSpawn(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"netns=on", Config{Workers: -1}}, {"netns=off", Config{Workers: -1, NoNetworkNamespace: true}}} {
		b.Run(c.name, func(b *testing.B) {
			p := newPool(b, c.cfg)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w, err := p.spawn()
				if err != nil {
					b.Fatal(err)
				}
				w.kill()
				p.wg.Add(1)
				w.readLoop()
			}
		})
	}
}

// parkedN is the number of executions BenchmarkParked parks.
const parkedN = 1000

// BenchmarkParked parks parkedN executions on pending tool calls and
// reports the memory it takes, at 1 and 16 executions per worker:
// "RSS-MiB" sums the resident memory of the supervisor and every worker,
// "PSS-MiB" their proportional share (shared pages counted once), and
// "KiB/exec" the PSS per parked execution.
func BenchmarkParked(b *testing.B) {
	for _, density := range []int{1, 16} {
		b.Run(fmt.Sprintf("perworker=%d", density), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				parked(b, density)
			}
		})
	}
}

func parked(b *testing.B, density int) {
	p := newPool(b, Config{Workers: -1, ExecutionsPerWorker: density, MaxWorkers: parkedN/density + 1, NoNetworkNamespace: true})
	entered, release := make(chan struct{}, parkedN), make(chan struct{})
	errs := make(chan error, parkedN)
	l := testLimits()
	l.Timeout = 5 * time.Minute
	for i := 0; i < parkedN; i++ {
		job, _ := newJob(b, `const r = await tools.block({}); return r.released`, l, blockingTool(entered, release))
		go func() {
			if out := p.Run(context.Background(), job); out.Err != nil {
				errs <- out.Err
				return
			}
			errs <- nil
		}()
	}
	for i := 0; i < parkedN; i++ {
		<-entered
	}
	b.StopTimer()
	runtime.GC()
	pids := []int{os.Getpid()}
	p.mu.Lock()
	for w := range p.procs {
		pids = append(pids, w.pid)
	}
	workers := len(p.procs)
	p.mu.Unlock()
	var rss, pss int64
	for _, pid := range pids {
		rss += procRSS(pid)
		pss += procPSS(pid)
	}
	b.ReportMetric(float64(rss)/(1<<20), "RSS-MiB")
	b.ReportMetric(float64(pss)/(1<<20), "PSS-MiB")
	b.ReportMetric(float64(pss)/1024/parkedN, "KiB/exec")
	b.ReportMetric(float64(workers), "workers")
	b.StartTimer()
	close(release)
	for i := 0; i < parkedN; i++ {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	_ = p.Close()
}

// procPSS returns the proportional set size of a process, 0 if unknown.
func procPSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	return statusField(data, "Pss:")
}

// BenchmarkFrameRoundTrip measures the IPC floor: an Execute frame the
// worker refuses at once (negative limits) and its Done frame, with no
// JavaScript run. The difference between engine=worker and engine=js in
// BenchmarkTrivial minus this figure is the worker's per-execution work.
func BenchmarkFrameRoundTrip(b *testing.B) {
	p := newPool(b, Config{Workers: -1})
	w, err := p.acquire(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	bad := testLimits()
	bad.MemoryBytes = -1
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		job, _ := newJob(b, `return 1`, bad)
		es := newExecState(context.Background(), job, time.Second)
		if !w.register(es) {
			b.Fatal("worker gone")
		}
		start := time.Now()
		if err := w.send(es.lane, &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Execute{Execute: executeFrame(es.slot, job)}}); err != nil {
			b.Fatal(err)
		}
		w.serveExec(es)
		ds = append(ds, time.Since(start))
		es.finish(&ptcruntime.Outcome{})
		w.unregister(es)
	}
	b.StopTimer()
	reportP50(b, ds)
	p.release(w, true)
}

// BenchmarkDiscovery measures tools.$search answered by the supervisor
// through a Discover frame, beside a script that does not search: the cost
// of keeping discovery in the supervisor instead of sending every tool's
// definition in each Execute frame.
func BenchmarkDiscovery(b *testing.B) {
	p := newPool(b, Config{})
	for _, c := range []struct{ name, src string }{
		{"search=none", `return 1`},
		{"search=one", `return (await tools.$search("adds numbers", 3)).length`},
	} {
		b.Run(c.name, func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				job, _ := newJob(b, c.src, testLimits())
				start := time.Now()
				if out := p.Run(context.Background(), job); out.Err != nil {
					b.Fatal(out.Err)
				}
				ds = append(ds, time.Since(start))
			}
			b.StopTimer()
			reportP50(b, ds)
		})
	}
}
