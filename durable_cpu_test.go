package ptc_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// cpuLoopJS computes for a while between a call to mark and a pause at
// ask_user.
const cpuLoopJS = `await tools.mark({});
let s = 0;
for (let i = 0; i < 2e6; i++) { s = (s + i) % 1000003; }
const a = await tools.ask_user({question: "go on?"});
return {s, id: a.id};`

// TestResumeCPULimitCountsOnlyCPU pauses a script in a worker process
// after a loop during which its worker was stopped (SIGSTOP) for longer
// than the execution's CPU time limit: the pause is charged the CPU time
// the loop used, not the time it took, and the resume, which replays the
// loop, ends within the limit. The limit is set from the loop's own CPU
// time, measured first, so that it is tight on any machine.
func TestResumeCPULimitCountsOnlyCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	marked := make(chan struct{}, 1)
	mark := tools.Tool{Definition: tools.Definition{Name: "mark", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			select {
			case marked <- struct{}{}:
			default:
			}
			return json.RawMessage(`{}`), nil
		}}
	r, err := ptc.NewRunner(ptc.WithTools(mark), ptc.WithDurable(ptc.Durable{Keys: testKeys, SigningKey: "k1"}),
		ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 1}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()

	// The loop's CPU time, unpaused and unstopped.
	probe := strings.Replace(cpuLoopJS, `const a = await tools.ask_user({question: "go on?"});`, `const a = {id: "x"};`, 1)
	res, err := r.Execute(ctx, ptc.Request{Source: probe, Limits: ptc.Limits{Timeout: 120 * time.Second, CPUTime: 60 * time.Second}})
	succeeded(t, res, err)
	<-marked
	loop := res.Stats.CPUTime
	// The resume replays the loop: twice the loop, with room, is within
	// the limit; the stop is longer than the limit.
	limit := 4*loop + time.Second
	hold := limit + time.Second

	stopped := make(chan error, 1)
	// The goroutine ends once the worker went on (or could not be
	// stopped).
	go func() { stopped <- stopWorkerDuring(marked, loop/4, hold) }()
	res, err = r.Execute(ctx, ptc.Request{Source: cpuLoopJS, Resumable: true, ClientTools: []tools.Tool{askUser},
		Limits: ptc.Limits{Timeout: 120 * time.Second, CPUTime: limit}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if !res.RequiresAction() || len(res.Pending) != 1 {
		t.Fatalf("no pause: %+v %v", res.Pending, res.Error)
	}
	t.Logf("loop %v; pause: %v CPU in %v, %v stopped; limit %v", loop, res.Stats.CPUTime, res.Stats.Duration, hold, limit)
	if res.Stats.CPUTime >= limit || res.Stats.CPUTime > res.Stats.Duration-hold {
		t.Fatalf("the pause was charged %v of CPU time in %v, %v of which the worker was stopped", res.Stats.CPUTime, res.Stats.Duration, hold)
	}
	res, err = r.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`{"id":"sal-01"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || res.RequiresAction() {
		t.Fatalf("resume: %v %+v", res.Error, res.Pending)
	}
	if res.Stats.CPUTime >= limit {
		t.Fatalf("the execution used %v of CPU time, its limit %v", res.Stats.CPUTime, limit)
	}
}

// stopWorkerDuring waits for marked, then for this process's worker to
// compute for at least busy, and stops it (SIGSTOP) for hold: its wall
// time passes, its CPU time does not — what a loaded host does to a
// worker, made certain.
func stopWorkerDuring(marked <-chan struct{}, busy, hold time.Duration) error {
	<-marked
	pid, err := onlyWorker()
	if err != nil {
		return err
	}
	start, err := processCPU(pid)
	if err != nil {
		return err
	}
	for {
		now, err := processCPU(pid)
		if err != nil {
			return err
		}
		if now-start >= busy {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	// hold is the condition under test (time not scheduled), not a wait
	// for something to happen.
	time.Sleep(hold)
	return syscall.Kill(pid, syscall.SIGCONT)
}

// onlyWorker returns the pid of this process's one child.
func onlyWorker() (int, error) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := os.Getpid()
	found := 0
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(me) {
			if found != 0 {
				return 0, errors.New("more than one child process")
			}
			found, _ = strconv.Atoi(filepath.Base(filepath.Dir(p)))
		}
	}
	if found == 0 {
		return 0, errors.New("no worker process")
	}
	return found, nil
}

// processCPU returns the user and system CPU time of a process, in clock
// ticks of 10 ms.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	// Fields 14 and 15 of stat (utime, stime) are 12 and 13 here.
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}
