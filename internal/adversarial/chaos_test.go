package adversarial

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// chaosMix is the steady load of the chaos test: short executions, most
// of them with tool calls. A worker killed under one of them fails it
// with INTERNAL (the cause is not the script); a request in flight when
// ptcd itself is killed fails with UNAVAILABLE.
func chaosMix() []burstItem {
	lost := func(w want) want { return w.or(Internal).orRefused(codes.Unavailable) }
	return []burstItem{
		{"tool-call", jsReq(`return (await tools.get_budget_by_level({level: "mid"})).level`), lost(succeeds(`"mid"`))},
		{"calls-together", jsReq(`const r = await Promise.all([1, 2, 3].map(() => tools.get_budget_by_level({level: "mid"}))); return r.length`), lost(succeeds("3"))},
		{"trivial", jsReq(`return 1 + 1`), lost(succeeds("2"))},
		{"compute", jsReq(`let s = 0; for (let i = 0; i < 200000; i++) s += i % 7; return s`), lost(succeeds("599994"))},
		{"typescript", tsReq(`const x: number[] = [1, 2, 3]; return x.length`), lost(succeeds("3"))},
	}
}

// chaosSpin is what one more client runs while workers are killed: a
// guest that computes until its deadline (its worker is killed then).
func chaosSpin() []burstItem {
	return []burstItem{{"spin", wasmReq(wasmSpin(), timeout(3*time.Second), cpu(60*time.Second)),
		fails(Timeout).or(Internal).orRefused(codes.Unavailable)}}
}

const (
	// chaosClients run requests one after another, each with
	// chaosDeadline: a request that has not returned by then hung.
	chaosClients  = 4
	chaosDeadline = 30 * time.Second
	// chaosKills is how long workers are killed at random.
	chaosKills = 20 * time.Second
	// orphanGrace is how long a worker may outlive a kill -9 of ptcd.
	orphanGrace = time.Second
)

// TestChaos kills ptcd's workers at random (kill -9) under a steady load
// of short executions with tool calls and a guest that computes, then
// kills ptcd itself under the load and while a guest computes — a worker
// that cannot notice that its pipe closed, which only its parent-death
// signal ends. Every request must return before its deadline with its
// answer or a classified error (INTERNAL for an execution whose worker
// was killed, UNAVAILABLE once ptcd is gone); ptcd must serve through the
// worker kills; no worker may outlive ptcd by more than orphanGrace; a
// restarted ptcd serves. Full suite only; about 40 s.
func TestChaos(t *testing.T) {
	if !fullSuite {
		t.Skip("the chaos test runs with -tags adversarial")
	}
	srv := newServer(t, worker)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	ptcd := srv.process()

	// seen holds every worker of this ptcd the test saw; none may run
	// once ptcd is gone.
	seen := map[int]bool{}
	workers := func() []int {
		var out []int
		for _, w := range childrenOf(ptcd.cmd.Process.Pid) {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", w)); err == nil && exe == ptcdBinary {
				seen[w] = true
				out = append(out, w)
			}
		}
		return out
	}

	// Clients run requests one after another until their stop channel is
	// closed, each request with its own deadline; wg ends with them.
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		problems []string
		outcomes = map[string]int{}
		killedAt atomic.Int64 // when ptcd was killed (unix ns); 0 before
	)
	client := func(stop <-chan struct{}, mix []burstItem, first int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := first; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				it := mix[i%len(mix)]
				ctx, cancel := context.WithTimeout(context.Background(), chaosDeadline)
				res, err := srv.rpc().Execute(ctx, it.req)
				cancel()
				outcome := "ok"
				switch {
				case err != nil:
					outcome = status.Code(err).String()
				case res.GetError() != nil:
					outcome = res.GetError().GetKind().String()
				}
				p := it.want.verify(res, err)
				if err != nil && status.Code(err) == codes.Unavailable && killedAt.Load() == 0 {
					p = append(p, "UNAVAILABLE while ptcd ran: "+err.Error())
				}
				mu.Lock()
				outcomes[outcome]++
				for _, s := range p {
					problems = append(problems, it.name+": "+s)
				}
				mu.Unlock()
			}
		}()
	}
	load := func(stop <-chan struct{}) {
		for c := range chaosClients {
			client(stop, chaosMix(), c)
		}
	}

	// Kill workers at random under the load and a computing guest. The
	// pauses between kills pace the chaos; nothing waits on them.
	chaos := make(chan struct{})
	load(chaos)
	client(chaos, chaosSpin(), 0)
	kills := 0
	for end := time.Now().Add(chaosKills); time.Now().Before(end); {
		time.Sleep(time.Duration(200+rng.IntN(600)) * time.Millisecond)
		ws := workers()
		if len(ws) == 0 {
			continue
		}
		if syscall.Kill(ws[rng.IntN(len(ws))], syscall.SIGKILL) == nil {
			kills++
		}
	}
	close(chaos)
	wg.Wait()
	select {
	case <-ptcd.done:
		t.Fatalf("ptcd died while its workers were killed (%v): %s", ptcd.exit, crashSummary(srv.log.since(0)))
	default:
	}

	// Then ptcd itself, while a guest computes (started alone, so that
	// its worker is the one that computes) and the load runs: the
	// requests in flight must return.
	final := make(chan struct{})
	spin := wasmReq(wasmSpin(), timeout(2*time.Minute), cpu(2*time.Minute))
	client(final, []burstItem{{"final-spin", spin, refused(codes.Unavailable)}}, 0)
	if busyWorker(srv) == 0 {
		t.Fatal("no worker computes the guest")
	}
	load(final)
	workers()
	killedAt.Store(time.Now().UnixNano())
	if err := ptcd.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	close(final)
	<-ptcd.done
	gone := time.Now()
	for {
		var alive []string
		for w := range seen {
			if running(w) {
				alive = append(alive, fmt.Sprint(w))
			}
		}
		strays := orphans()
		for _, o := range strays {
			if !seen[o] {
				alive = append(alive, fmt.Sprint(o))
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Since(gone) > orphanGrace {
			t.Errorf("workers still run %v after ptcd was killed: %s", orphanGrace, strings.Join(alive, ", "))
			for w := range seen {
				if running(w) {
					_ = syscall.Kill(w, syscall.SIGKILL)
				}
			}
			for _, o := range strays {
				_ = syscall.Kill(o, syscall.SIGKILL)
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()

	if err := srv.restart(); err != nil {
		t.Fatalf("ptcd did not restart: %v", err)
	}
	if err := trivial(srv.rpc(), 15*time.Second); err != nil {
		t.Errorf("the restarted ptcd does not serve: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), chaosDeadline)
	defer cancel()
	res, err := srv.rpc().Execute(ctx, chaosMix()[0].req)
	if p := succeeds(`"mid"`).verify(res, err); len(p) > 0 {
		t.Errorf("a tool call on the restarted ptcd: %s", p[0])
	}

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d workers killed, %d seen; outcomes %v", kills, len(seen), outcomes)
	if outcomes["ok"] == 0 {
		t.Error("no request succeeded under the chaos")
	}
	for i, p := range problems {
		if i == 20 {
			t.Errorf("… and %d more", len(problems)-i)
			break
		}
		t.Error(p)
	}
}

// running reports whether pid runs the ptcd binary (not a zombie, not
// another program that reused the pid).
func running(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && exe == ptcdBinary
}

// orphans lists the processes running the ptcd binary whose parent is
// neither this test nor a ptcd: workers that outlived their ptcd.
func orphans() []int {
	me := os.Getpid()
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || !running(pid) {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		var state string
		var ppid int
		if _, err := fmt.Sscan(s[strings.LastIndexByte(s, ')')+1:], &state, &ppid); err != nil {
			continue
		}
		if ppid != me && !running(ppid) {
			out = append(out, pid)
		}
	}
	return out
}
