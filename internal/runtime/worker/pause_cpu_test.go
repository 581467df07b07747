package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ptcrun/ptc/tools"
)

// stopDuring stops the worker running an execution (SIGSTOP) once its
// lane thread has computed for a while after marked is signalled, keeps
// it stopped for hold and lets it go on (SIGCONT). While it is stopped the
// script's thread is not scheduled: its wall time passes, its CPU time
// does not — what a loaded host does to a worker, made certain.
func stopDuring(p *Pool, marked <-chan struct{}, hold time.Duration) error {
	<-marked
	p.mu.Lock()
	var w *proc
	for c := range p.procs {
		if c.active > 0 {
			w = c
		}
	}
	p.mu.Unlock()
	if w == nil {
		return errors.New("no busy worker")
	}
	clock, err := w.laneClock(1)
	if err != nil {
		return err
	}
	start, err := readThreadCPU(clock)
	if err != nil {
		return err
	}
	// The script's loop runs once its thread computes after the mark; the
	// loop is long enough (hundreds of ms of CPU) to be stopped inside.
	for {
		now, err := readThreadCPU(clock)
		if err != nil {
			return err
		}
		if now-start >= 20*time.Millisecond {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := syscall.Kill(w.pid, syscall.SIGSTOP); err != nil {
		return err
	}
	// hold is the condition under test (time not scheduled), not a wait
	// for something to happen.
	time.Sleep(hold)
	return syscall.Kill(w.pid, syscall.SIGCONT)
}

// TestPausedSegmentCPUIsThreadCPU checks that the CPU time a worker
// reports when a resumable execution waits (the figure a pause is charged
// with) is its thread's CPU time, like the CPU time of the whole
// execution, and not the VM's running time: the script's loop is stopped
// for a second, which the VM's running time counts and the CPU clock does
// not.
func TestPausedSegmentCPUIsThreadCPU(t *testing.T) {
	const hold = time.Second
	marked := make(chan struct{}, 1)
	// idled carries the worker's reports that the script waits, numbered
	// in the order they were made: the first is the wait for mark, the
	// second the wait for wait.
	type report struct {
		n   int
		cpu time.Duration
	}
	idled := make(chan report, 16)
	waited := make(chan time.Duration, 1)
	mark := tools.Tool{Definition: tools.Definition{Name: "mark", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			marked <- struct{}{}
			return json.RawMessage(`{}`), nil
		}}
	// wait returns once the worker reported that the script waits for it,
	// and keeps the CPU time reported then.
	wait := tools.Tool{Definition: tools.Definition{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			// The report of this wait may be handled before this handler
			// runs or after: it is told by its number, not its timing.
			for {
				select {
				case r := <-idled:
					if r.n == 2 {
						waited <- r.cpu
						return json.RawMessage(`{}`), nil
					}
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}}
	p := newPool(t, Config{Workers: -1, MaxWorkers: 1})
	l := testLimits()
	l.Timeout, l.CPUTime = 5*time.Minute, 5*time.Minute
	job, _ := newJob(t, `await tools.mark({});
let s = 0;
for (let i = 0; i < 2e6; i++) { s = (s + i) % 1000003; }
await tools.wait({});
return s;`, l, mark, wait)
	// Reports are made in the order of the worker's frames.
	var reports atomic.Int32
	job.Idle = func(_ int, cpu time.Duration) {
		select {
		case idled <- report{int(reports.Add(1)), cpu}:
		default:
		}
	}
	// The goroutine ends once the worker went on (or could not be
	// stopped); its error is read below.
	stopped := make(chan error, 1)
	go func() { stopped <- stopDuring(p, marked, hold) }()
	began := time.Now()
	out := p.Run(context.Background(), job)
	wall := time.Since(began)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	paused := <-waited
	t.Logf("wait reported %v, execution %v, wall %v", paused, out.CPUTime, wall)
	if paused > out.CPUTime {
		t.Errorf("the wait reported %v of CPU time, more than the %v the whole execution used", paused, out.CPUTime)
	}
	if paused > wall-hold {
		t.Errorf("the wait reported %v of CPU time; the thread was scheduled for at most %v (%v wall, %v stopped)", paused, wall-hold, wall, hold)
	}
}

// cpuSink keeps TestReadThreadCPUAgain's loop from being optimised away.
var cpuSink int

// TestReadThreadCPUAgain: a schedstat file opened once reads its thread's
// CPU time anew at every read, as a lane's CPU watch reads it for every
// execution; once closed, it reads nothing.
func TestReadThreadCPUAgain(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/schedstat", syscall.Gettid()))
	if err != nil {
		t.Skipf("no schedstat: %v", err)
	}
	start, err := readThreadCPU(f)
	if err != nil {
		t.Fatal(err)
	}
	for {
		for i := range 1_000_000 {
			cpuSink += i
		}
		now, err := readThreadCPU(f)
		if err != nil {
			t.Fatal(err)
		}
		if now > start {
			break
		}
	}
	_ = f.Close()
	if _, err := readThreadCPU(f); err == nil {
		t.Fatal("a closed schedstat file was read")
	}
}
