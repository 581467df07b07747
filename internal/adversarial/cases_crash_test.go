package adversarial

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// cpuTicks returns a process's user+system CPU ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	var u, k int64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &k)
	return u + k
}

// busyWorker returns the worker that computes (its CPU ticks grow) while
// a spinning execution runs, waiting up to 10s for it.
func busyWorker(s *server) int {
	before := map[int]int64{}
	for _, w := range childrenOf(s.pid()) {
		before[w] = cpuTicks(w)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, w := range childrenOf(s.pid()) {
			if t, ok := before[w]; !ok {
				before[w] = cpuTicks(w)
			} else if cpuTicks(w)-t >= 20 { // 200ms of CPU at 100 ticks/s
				return w
			}
		}
	}
	return 0
}

// crashCases kill a worker in the middle of an execution, as a crash
// would: only that execution is lost (INTERNAL is right here: the cause
// is not the script), and the worker's own crash output reaches ptcd's
// log with the execution id, for the operator.
func crashCases() []tcase {
	kill := func(name string, sig syscall.Signal) tcase {
		return tcase{
			name: name, family: famBomb, modes: worker, bound: 20 * time.Second, want: fails(Internal),
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				id := fmt.Sprintf("crash-%d", time.Now().UnixNano())
				type answer struct {
					res *ptcv1.ExecuteResponse
					err error
				}
				done := make(chan answer, 1)
				// The execution runs while the worker is found and killed;
				// the goroutine ends with the RPC.
				go func() {
					res, err := e.c.Execute(ctx, jsReq(`for (;;) {}`, execID(id), timeout(15*time.Second), cpu(15*time.Second)))
					done <- answer{res, err}
				}()
				w := busyWorker(e.srv)
				if w == 0 {
					e.fail("found no busy worker")
				} else {
					_ = syscall.Kill(w, sig)
				}
				a := <-done
				if sig == syscall.SIGQUIT && w != 0 {
					logged := false
					var withID []string
					for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !logged; time.Sleep(100 * time.Millisecond) {
						withID = nil
						for _, line := range strings.Split(e.srv.log.since(e.mark), "\n") {
							if strings.Contains(line, id) {
								withID = append(withID, clip(line, 400))
								logged = logged || strings.Contains(line, "SIGQUIT")
							}
						}
					}
					if !logged {
						e.fail("the worker's crash output (Go's \"SIGQUIT: quit\" and its goroutine dump) never reached ptcd's log with execution id %s; its records: %s", id, strings.Join(withID, " / "))
					}
				}
				return a.res, a.err
			},
		}
	}
	return []tcase{
		kill("worker-killed-mid-execution", syscall.SIGKILL),
		kill("worker-crash-output-logged", syscall.SIGQUIT),
	}
}
