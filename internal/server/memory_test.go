package server_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// selfRSS returns this process's resident memory from /proc.
func selfRSS(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// rssPeak samples the process's RSS until stop is called and returns the
// highest value seen.
func rssPeak(t testing.TB) (stop func() int64) {
	done := make(chan struct{})
	peak := make(chan int64, 1)
	// The sampler ends when done is closed.
	go func() {
		var max int64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if r := selfRSS(t); r > max {
				max = r
			}
			select {
			case <-done:
				peak <- max
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(done); return <-peak }
}

// memoryChild marks the process TestSupervisorMemoryPerExecution starts
// to measure in.
const memoryChild = "PTC_TEST_MEMORY_CHILD"

// TestSupervisorMemoryPerExecution runs bursts of large executions (1 MiB
// source and 7 MiB input each; scripts in worker processes) through the
// server: while they run, the server's memory grows by at most the
// per-execution bound docs/security.md states (here about 5 copies of the
// request, counted twice for the garbage collector's headroom) per
// execution in flight, and after them the server gives the memory back
// (the release the large executions scheduled), to within 48 MiB of where
// it started.
func TestSupervisorMemoryPerExecution(t *testing.T) {
	if os.Getenv(memoryChild) == "" {
		// RSS is the whole process's: measured in a process of its own,
		// what earlier tests of this package left on the heap is not
		// counted as the server's.
		cmd := exec.Command(os.Args[0], "-test.run=^TestSupervisorMemoryPerExecution$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), memoryChild+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("the measuring process:\n%s", out)
		if err != nil {
			t.Fatalf("the measuring process: %v", err)
		}
		return
	}
	released := make(chan time.Time, 64)
	reg := newExecutor(t).Registry()
	// A fixed pool: each worker's connection keeps buffers sized to the
	// largest frame it carried, so a worker first used during the measured
	// bursts (one the warm-up did not reach on a loaded machine) would
	// count as growth.
	ex, err := executor.New(executor.Config{Registry: reg, Workers: &worker.Config{Workers: 8, MaxWorkers: 8}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Close() }) // after the server stopped
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(25 << 20))
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex, server.WithMemoryRelease(server.DefaultReleaseAfter, func() {
		server.ReleaseMemory()
		released <- time.Now()
	})))
	conn := serve(t, gs, grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(25<<20)))
	c := ptcv1.NewRunnerServiceClient(conn)

	src := "return 1 //" + strings.Repeat("x", 1<<20-20)
	in := `"` + strings.Repeat("y", 7<<20+64) + `"`
	const requestBytes, inFlight = 8 << 20, 8
	run := func() {
		var wg sync.WaitGroup
		for i := 0; i < inFlight; i++ {
			wg.Add(1)
			// One goroutine per execution; it ends with its RPC.
			go func() {
				defer wg.Done()
				req := jsReq(src)
				req.InputJson = in
				res, err := c.Execute(context.Background(), req)
				if err != nil || res.GetResultJson() != "1" {
					t.Errorf("execution: %v %v", err, res.GetError())
				}
			}()
		}
		wg.Wait()
	}
	// Warm up: workers started, buffers sized; twice, so that every
	// worker has most likely carried a large request.
	run()
	run()
	select {
	case <-released:
	case <-time.After(time.Minute):
		t.Fatal("no memory release after the large executions")
	}
	// Collected the way ptcd's release collects: twice, so that buffers
	// parked in sync.Pools (gRPC's among them), which survive one
	// collection, are gone too.
	server.ReleaseMemory()
	before := selfRSS(t)
	stop := rssPeak(t)
	var last time.Time // when the last burst started
	for i := 0; i < 3; i++ {
		last = time.Now()
		run()
	}
	peak := stop()
	// The client's copies of each request live in this process too.
	bound := int64(inFlight) * 2 * 5 * requestBytes
	t.Logf("RSS %d MiB before, %d MiB at the peak of 3 bursts of %d executions (bound +%d MiB)", before>>20, peak>>20, inFlight, bound>>20)
	if peak-before > bound {
		t.Errorf("the server grew by %d MiB, more than the %d MiB bound", (peak-before)>>20, bound>>20)
	}
	// Every large execution is followed by a release within a second: wait
	// for one after the last burst began (it may run before this client
	// sees its last answer; one that runs during the burst is followed by
	// another once the burst's executions end, and both are measured the
	// same way below).
	for deadline := time.After(time.Minute); ; {
		select {
		case at := <-released:
			if at.Before(last) {
				continue
			}
		case <-deadline:
			t.Fatal("no memory release after the large executions")
		}
		break
	}
	after := selfRSS(t)
	t.Logf("RSS %d MiB after the release", after>>20)
	if after-before > 48<<20 && !raceEnabled {
		// The release may run while this process's other half (the
		// client, the server's transport) still holds the last burst's
		// buffers. Measured the way "before" was, the memory must be back:
		// what stays then is held, not merely not yet returned.
		server.ReleaseMemory()
		again := selfRSS(t)
		t.Logf("RSS %d MiB after the release, %d MiB once this process collected as before the bursts", after>>20, again>>20)
		if again-before > 48<<20 {
			t.Errorf("RSS %d MiB after the release and a collection, %d MiB before the bursts", again>>20, before>>20)
		}
	}
}
