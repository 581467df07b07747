package adversarial

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soakRuns is the number of executions of the soak in each mode.
const soakRuns = 10000

// soakMix is what the soak runs, in turn: ordinary work, small failures
// and small breaches, so that every path that could leak is exercised.
func soakMix() []burstItem {
	return []burstItem{
		{"trivial", jsReq(`return 1 + 1`), succeeds("2")},
		{"tool-call", jsReq(`return (await tools.get_budget_by_level({level: "mid"})).level`), succeeds(`"mid"`)},
		{"expenses", jsReq(`const e = await tools.get_expenses({member_id: "eng-02", quarter: "Q2"}); return e.length > 0`), succeeds("true")},
		{"throws", jsReq(`throw new TypeError("soak")`), fails(ScriptError)},
		{"logs", jsReq(`for (let i = 0; i < 100; i++) console.log("soak line", i); return 1`, maxLogs(1024)), succeeds("1")},
		{"typescript", tsReq(`const x: number[] = [1, 2, 3]; return x.reduce((a: number, b: number) => a + b, 0)`), succeeds("6")},
		{"syntax-error", jsReq(`return (`), fails(SyntaxError)},
		{"output-limit", jsReq(`return "x".repeat(2000)`, maxOutput(1000)), fails(OutputLimit)},
		{"call-limit", jsReq(`for (;;) await tools.get_budget_by_level({level: "mid"})`, maxCalls(3)), fails(ToolCallLimit)},
		{"wasm", wasmReq(wasmPrint(`{"soak":true}`)), succeeds(`{"soak":true}`)},
	}
}

// TestSoak runs 10,000 executions against each mode and reports ptcd's
// RSS and its workers' before and after. Full suite only.
func TestSoak(t *testing.T) {
	if !fullSuite {
		t.Skip("the soak runs with -tags adversarial")
	}
	for _, m := range []mode{worker, inprocess} {
		t.Run(m.String(), func(t *testing.T) {
			srv := newServer(t, m)
			ctx := context.Background()
			run := func(n int) (failed []string, took time.Duration) {
				mix := soakMix()
				var next atomic.Int64
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := time.Now()
				for w := 0; w < 8; w++ {
					wg.Add(1)
					// Eight clients; each ends when the runs are used up.
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1) - 1
							if i >= int64(n) {
								return
							}
							it := mix[i%int64(len(mix))]
							cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
							res, err := srv.rpc().Execute(cctx, it.req)
							cancel()
							if p := it.want.verify(res, err); len(p) > 0 {
								mu.Lock()
								failed = append(failed, it.name+": "+p[0])
								mu.Unlock()
							}
						}
					}()
				}
				wg.Wait()
				return failed, time.Since(start)
			}
			// Warm up: caches, the worker pool, the Go heap.
			if failed, _ := run(500); len(failed) > 0 {
				t.Fatalf("warm-up: %d failed, e.g. %s", len(failed), failed[0])
			}
			supBefore, _ := rssOf(srv.pid())
			nBefore, wBefore := srv.workerRSS()
			failed, took := run(soakRuns)
			supAfter, _ := rssOf(srv.pid())
			nAfter, wAfter := srv.workerRSS()
			report := fmt.Sprintf("soak %s: %d executions in %v (%.0f/s); ptcd RSS %s → %s (%+.1f MiB); workers %d (%s) → %d (%s)",
				m, soakRuns, took.Round(time.Millisecond), float64(soakRuns)/took.Seconds(),
				mib(supBefore), mib(supAfter), float64(supAfter-supBefore)/(1<<20), nBefore, mib(wBefore), nAfter, mib(wAfter))
			t.Log(report)
			fmt.Println(report)
			if len(failed) > 0 {
				t.Errorf("%d of %d soak executions failed, e.g. %s", len(failed), soakRuns, failed[0])
			}
			if err := srv.alive(0); err != nil {
				t.Error(err)
			}
			// Generous bounds: a leak of a few KiB per execution would
			// pass 10,000 runs unnoticed only below these.
			if grew := supAfter - supBefore; grew > 96*MiB {
				t.Errorf("ptcd's RSS grew by %s over %d executions", mib(grew), soakRuns)
			}
			// Eight clients keep about eight workers busy, plus the idle ones.
			if m == worker && (nAfter > 12 || wAfter > 12*96*MiB) {
				t.Errorf("after the soak %d workers hold %s", nAfter, mib(wAfter))
			}
		})
	}
}
