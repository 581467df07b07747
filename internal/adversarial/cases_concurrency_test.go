package adversarial

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// burstItem is one kind of execution in a burst, with its expectation.
type burstItem struct {
	name string
	req  *ptcv1.ExecuteRequest
	want want
}

// mixedBombs are the executions of the mixed burst: under contention a
// bomb may hit its wall clock first, so the time limits are accepted for
// every bomb; everything else must be exact.
func mixedBombs() []burstItem {
	busy := fails(Timeout, CPULimit)
	return []burstItem{
		{"string-doubling", jsReq(`let s = "x"; for (;;) s += s;`, tight), fails(MemoryLimit, ScriptError, Timeout)},
		{"array-push", jsReq(`const a = []; for (;;) a.push({n: a.length});`, tight), fails(MemoryLimit, Timeout)},
		{"cpu-loop", jsReq(`for (;;) {}`, tight), busy},
		{"microtasks", jsReq(`for (;;) await null;`, tight), busy},
		{"log-flood", jsReq(`for (let i = 0; i < 3e5; i++) console.log("line " + i); return 1`, timeout(30*time.Second), maxLogs(16*KiB)), succeeds("1").and(logsBounded).or(Timeout)},
		{"call-flood", jsReq(`for (;;) await tools.get_budget_by_level({level: "mid"});`, timeout(30*time.Second), maxCalls(100)), fails(ToolCallLimit)},
		{"output-flood", jsReq(`return "x".repeat(3 << 20)`, timeout(30*time.Second)), fails(OutputLimit)},
		{"wasm-grow", wasmReq(wasmGrow(16, true), timeout(30*time.Second), memory(64*MiB)), fails(MemoryLimit)},
		{"wasm-spin", wasmReq(wasmSpin(), tight), busy},
		{"normal", jsReq(`const t = await tools.get_team_members({department: "sales"}); return t.length`, timeout(30*time.Second)), succeeds("8")},
		{"typescript", tsReq(`const n: number = (await tools.get_budget_by_level({level: "staff"})).travel_limit; return n > 0`, timeout(30*time.Second)), succeeds("true")},
	}
}

// runBurst sends n executions at once, cycling through items, and
// returns the problems per item kind.
func runBurst(ctx context.Context, e *env, items []burstItem, n int) {
	var mu sync.Mutex
	bad := map[string][]string{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		it := items[i%len(items)]
		wg.Add(1)
		// One goroutine per execution of the burst; it ends with its RPC.
		go func() {
			defer wg.Done()
			res, err := e.c.Execute(ctx, it.req)
			if p := it.want.verify(res, err); len(p) > 0 {
				mu.Lock()
				bad[it.name] = append(bad[it.name], p[0])
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var names []string
	for k := range bad {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		e.fail("burst %s: %d failed, e.g. %s", k, len(bad[k]), bad[k][0])
	}
}

// afterBurst checks that ten ordinary executions succeed.
func afterBurst(ctx context.Context, e *env) {
	for i := 0; i < 10; i++ {
		res, err := e.c.Execute(ctx, jsReq(`return (await tools.get_budget_by_level({level: "junior"})).level`))
		if err != nil || res.GetResultJson() != `"junior"` {
			e.fail("after the burst, execution %d: %s", i, describe(res, err))
			return
		}
	}
}

func concurrencyCases() []tcase {
	return []tcase{
		{
			name: "burst-64-mixed-bombs", family: famConcurrency, fast: true, bound: 90 * time.Second, want: checkedByDo,
			residual:      "the burst's memory bombs inflate ptcd's shared heap, which in-process executions are measured against: an innocent execution that computes while they allocate can be charged with their memory (MEMORY_LIMIT)",
			residualModes: inprocess,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				runBurst(ctx, e, mixedBombs(), 64)
				afterBurst(ctx, e)
				return nil, nil
			},
		},
		{
			// WebAssembly runs in ptcd in both modes: the guests' call
			// stacks (wazero grows them by copying, up to 100 MB each)
			// are ptcd's own memory, outside memory_bytes.
			name: "burst-16-wasm-call-stacks", family: famConcurrency, bound: 90 * time.Second, want: checkedByDo, serverSettle: 256 * MiB,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				before, _ := rssOf(e.srv.pid())
				sampler := sampleRSS(e.srv.pid())
				runBurst(ctx, e, []burstItem{{"wasm-recursion", wasmReq(wasmRecurse(), timeout(60*time.Second), memory(64*MiB)), fails(ScriptError)}}, 16)
				peak := sampler.stop()
				e.note("16 concurrent WebAssembly recursions to the engine's stack limit: ptcd %s before, %s at the peak (+%s)", mib(before), mib(peak), mib(peak-before))
				return nil, nil
			},
			residual:      "WebAssembly call stacks are ptcd's own memory (wazero grows a guest's stack by copying, up to 100 MB, outside memory_bytes): 16 recursions at once grow ptcd by up to GiBs",
			residualModes: worker | inprocess,
		},
		{
			name: "burst-64-memory-bombs", family: famConcurrency, bound: 90 * time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				runBurst(ctx, e, []burstItem{
					{"string-doubling", jsReq(`let s = "x"; for (;;) s += s;`, tight), fails(MemoryLimit, ScriptError, Timeout)},
					{"object-graph", jsReq(`const all = []; for (let i = 0; ; i++) all.push({i, s: "n" + i});`, tight), fails(MemoryLimit, Timeout)},
					{"arraybuffers", jsReq(`const k = []; for (;;) k.push(new ArrayBuffer(1 << 20));`, tight), fails(MemoryLimit, Timeout)},
				}, 64)
				afterBurst(ctx, e)
				return nil, nil
			},
			residual:      "64 concurrent memory bombs in-process share ptcd's heap, which has no OS limit of its own: ptcd's memory grows by GiBs and it may run out, failing every execution in flight",
			residualModes: inprocess,
		},
		{
			name: "burst-64-sessions-disconnect", family: famConcurrency, fast: true, bound: 60 * time.Second, want: checkedByDo,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for i := 0; i < 64; i++ {
					wg.Add(1)
					// One goroutine per session; it ends when the session is dropped.
					go func() {
						defer wg.Done()
						cctx, cancel := context.WithCancel(ctx)
						defer cancel()
						s, err := openSession(cctx, e.c, jsReq(`await Promise.all([tools.fetch({}), tools.fetch({})]); for (;;) {}`, timeout(30*time.Second)), echo)
						if err == nil {
							var m *ptcv1.SessionResponse
							m, err = s.st.Recv()
							if err == nil && m.GetToolCall() == nil {
								err = fmt.Errorf("first message %v", m)
							}
						}
						if err != nil {
							mu.Lock()
							e.fail("session: %v", err)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				afterBurst(ctx, e)
				return nil, nil
			},
		},
		{
			name: "admission-queue-full", family: famConcurrency, bound: 90 * time.Second, want: checkedByDo,
			do: admissionCase,
		},
		{
			// What one burst of large requests needed is given back.
			name: "supervisor-releases-large-sources", family: famConcurrency, bound: 60 * time.Second, want: checkedByDo, serverSettle: 64 * MiB,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				src := "return 1 //" + strings.Repeat("x", 1<<20-20)
				in := `"` + strings.Repeat("y", 7<<20) + `"`
				runBurst(ctx, e, []burstItem{{"large", jsReq(src, input(in), timeout(30*time.Second)), succeeds("1")}}, 32)
				return nil, nil
			},
			residual:      "32 concurrent 8 MiB executions in-process are measured against ptcd's shared heap, so one can be charged with the others' requests (MEMORY_LIMIT at 256 MiB)",
			residualModes: inprocess,
		},
		{
			name: "supervisor-releases-large-client-results", family: famConcurrency, bound: 60 * time.Second, want: checkedByDo, serverSettle: 64 * MiB,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				var wg sync.WaitGroup
				for i := 0; i < 8; i++ {
					wg.Add(1)
					// One goroutine per session; it ends with the session.
					go func() {
						defer wg.Done()
						s, err := openSession(ctx, e.c, jsReq(`return (await tools.fetch({})).length`, memory(512*MiB), timeout(30*time.Second)), echo)
						if err != nil {
							return
						}
						_, _, _ = s.serve(answerWith(s, `"`+strings.Repeat("z", 20<<20)+`"`))
					}()
				}
				wg.Wait()
				return nil, nil
			},
		},
		{
			name: "pool-shrinks-after-burst", family: famConcurrency, bound: 120 * time.Second, want: checkedByDo, modes: worker,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				supBefore, _ := rssOf(e.srv.pid())
				var peakN int
				var peakRSS, supPeak int64
				park(ctx, e, 40, func() {
					if peakN, peakRSS = e.srv.workerRSS(); peakN < 40 {
						e.fail("only %d workers ran 40 parked executions", peakN)
					}
					supPeak, _ = rssOf(e.srv.pid())
				})
				// The shrink is timed from the end of the burst, to within
				// the 100 ms the pool is looked at.
				end := time.Now()
				var n int
				var rss int64
				for deadline := end.Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
					if n, rss = e.srv.workerRSS(); n <= 2 {
						supAfter, _ := rssOf(e.srv.pid())
						e.note("idle shrink: %d workers (%s) after the burst, %d (%s) %.1fs later (workers.idle 2, idle_timeout 30s); ptcd %s before the burst, %s during it, %s after the shrink",
							peakN, mib(peakRSS), n, mib(rss), time.Since(end).Seconds(), mib(supBefore), mib(supPeak), mib(supAfter))
						return nil, nil
					}
				}
				e.fail("90s after the burst %d workers (%s) are still alive; workers.idle is 2", n, mib(rss))
				return nil, nil
			},
		},
	}
}

// park holds n executions on an unanswered client tool call, runs during,
// then answers them all.
func park(ctx context.Context, e *env, n int, during func()) {
	var sessions []*sess
	for i := 0; i < n; i++ {
		s, err := openSession(ctx, e.c, jsReq(`return await tools.fetch({})`, timeout(60*time.Second)), echo)
		if err != nil {
			e.fail("session %d: %v", i, err)
			break
		}
		m, err := s.st.Recv()
		if err != nil || m.GetToolCall() == nil {
			e.fail("session %d: first message %v, %v", i, m, err)
			break
		}
		sessions = append(sessions, s)
	}
	during()
	for _, s := range sessions {
		_ = s.st.CloseSend()
		_, _, _ = s.serve(nil)
	}
}

// admissionCase fills every execution slot with parked sessions, then
// sends more executions than the queue holds: the excess is refused with
// RESOURCE_EXHAUSTED at once, the queued ones run once the slots free.
func admissionCase(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
	var refusedN, okN int
	var other []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	park(ctx, e, 64, func() {
		for i := 0; i < 300; i++ {
			wg.Add(1)
			// One goroutine per queued execution; it ends with its RPC.
			go func() {
				defer wg.Done()
				res, err := e.c.Execute(ctx, jsReq("return 1"))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case status.Code(err) == codes.ResourceExhausted:
					refusedN++
				case err == nil && res.GetResultJson() == "1":
					okN++
				default:
					other = append(other, describe(res, err))
				}
			}()
		}
		// Wait until the queue is full and the excess refused: refusals
		// come at once, so poll for them.
		for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			r := refusedN
			mu.Unlock()
			if r >= 300-256 {
				break
			}
		}
	})
	wg.Wait()
	if refusedN == 0 || okN == 0 || len(other) > 0 {
		e.fail("300 executions over 64 busy slots and a queue of 256: %d refused, %d ran, others: %s", refusedN, okN, strings.Join(other, "; "))
	}
	return nil, nil
}
