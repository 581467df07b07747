package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/testenv"
)

// logSink collects a pool's log records (JSON lines).
type logSink struct{ testenv.SyncBuffer }

// records returns the records logged so far.
func (s *logSink) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func (s *logSink) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitFor waits, on the pool's change notifications (never a sleep), until
// cond holds.
func waitFor(t *testing.T, p *Pool, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// TestIdleWorkersShrink: after a burst parks 6 executions on 6 workers,
// the pool keeps the workers until they have been idle for IdleTimeout,
// then stops all but the Workers kept warm, the longest idle first.
func TestIdleWorkersShrink(t *testing.T) {
	const burst = 6
	p := newPool(t, Config{Workers: 1, MaxWorkers: burst + 2, IdleTimeout: time.Hour})
	entered, release := make(chan struct{}, burst), make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < burst; i++ {
		wg.Add(1)
		job, _ := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered, release))
		// Each execution's goroutine ends when the tool is released.
		go func() {
			defer wg.Done()
			if out := p.Run(context.Background(), job); out.Err != nil {
				t.Error(out.Err)
			}
		}()
	}
	for i := 0; i < burst; i++ {
		<-entered
	}
	close(release)
	wg.Wait()
	if alive := p.Stats().Alive; alive < burst {
		t.Fatalf("%d workers alive after a burst of %d", alive, burst)
	}
	p.mu.Lock()
	armed := p.shrink != nil
	excess := len(p.excessIdleLocked())
	p.mu.Unlock()
	if !armed || excess < burst-1 {
		t.Fatalf("shrink armed %v with %d workers in excess", armed, excess)
	}

	// A worker picked now is the one idle for the shortest time; the
	// others age. Age them all past IdleTimeout but that one, and run
	// the timer's work — once no worker is starting (one that joined
	// later would be the most recently idle).
	job, _ := newJob(t, `return 2`, testLimits())
	if out := p.Run(context.Background(), job); out.Err != nil {
		t.Fatal(out.Err)
	}
	waitFor(t, p, "the pool to finish starting workers", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.spawning == 0
	})
	p.mu.Lock()
	var recent *proc
	for w := range p.procs {
		if recent == nil || w.idleSince.After(recent.idleSince) {
			recent = w
		}
	}
	for w := range p.procs {
		if w != recent {
			w.idleSince = time.Now().Add(-2 * time.Hour)
		}
	}
	p.mu.Unlock()
	p.shrinkIdle()
	waitFor(t, p, "the pool to shrink to one worker", func() bool { return p.Stats().Alive == 1 })
	p.mu.Lock()
	_, kept := p.procs[recent]
	p.mu.Unlock()
	if !kept {
		t.Error("the most recently used worker was stopped")
	}
	if s := p.Stats(); s.Shrunk < burst-1 {
		t.Errorf("stats %+v, want %d shrunk", s, burst-1)
	}
	job, _ = newJob(t, `return 3`, testLimits())
	if out := p.Run(context.Background(), job); out.Err != nil || string(out.Result) != "3" {
		t.Fatalf("after the shrink: %s %v", out.Result, out.Err)
	}
}

// TestIdleTimeoutExpires lets the real timer shrink a pool (a short idle
// timeout): the pool gets back to Workers.
func TestIdleTimeoutExpires(t *testing.T) {
	p := newPool(t, Config{Workers: 1, MaxWorkers: 4, IdleTimeout: 20 * time.Millisecond})
	entered, release := make(chan struct{}, 3), make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		job, _ := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered, release))
		// Each goroutine ends when the tool is released.
		go func() { defer wg.Done(); p.Run(context.Background(), job) }()
	}
	for i := 0; i < 3; i++ {
		<-entered
	}
	close(release)
	wg.Wait()
	waitFor(t, p, "the pool to shrink to one worker", func() bool { return p.Stats().Alive == 1 })
}

// TestWorkerCrashOutputLogged: what a worker writes when it dies — a
// signal's goroutine dump, the Go runtime's own "fatal error: ..." —
// reaches the pool's log with the execution id, bounded; a kill from
// outside is logged as a death.
func TestWorkerCrashOutputLogged(t *testing.T) {
	cases := []struct {
		name   string
		sig    syscall.Signal
		msg    string
		stderr string // what the record must quote; empty: no stderr
	}{
		{"SIGQUIT dump", syscall.SIGQUIT, "worker process died", "SIGQUIT: quit"},
		{"SIGABRT crash", syscall.SIGABRT, "worker process died", "SIGABRT: abort"},
		{"killed from outside", syscall.SIGKILL, "worker process died", ""},
		{"Go fatal error", syscall.SIGUSR1, "worker process died", "fatal error: sync: unlock of unlocked mutex"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sink logSink
			cfg := Config{Workers: 1, Logger: sink.logger()}
			if c.sig == syscall.SIGUSR1 {
				cfg.Executable = fatalWorker(t)
			}
			p := newPool(t, cfg)
			entered, release := make(chan struct{}, 1), make(chan struct{})
			defer close(release)
			id := fmt.Sprintf("crash-%s", c.sig)
			job, _ := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered, release))
			job.ExecutionID = id
			res := make(chan *fault.Error, 1)
			go func() { res <- p.Run(context.Background(), job).Err }()
			<-entered
			if err := syscall.Kill(busyPID(t, p), c.sig); err != nil {
				t.Fatal(err)
			}
			if fe := <-res; fe == nil || fe.Kind != fault.KindInternal {
				t.Fatalf("error %v, want INTERNAL", fe)
			}
			var rec map[string]any
			for _, r := range sink.records(t) {
				if r["msg"] == c.msg {
					rec = r
				}
			}
			if rec == nil {
				t.Fatalf("no %q record in %v", c.msg, sink.records(t))
			}
			if rec["execution_id"] != id || rec["level"] != "ERROR" {
				t.Errorf("record %v, want execution_id %s at ERROR", rec, id)
			}
			got, _ := rec["stderr"].(string)
			if c.stderr != "" && !strings.Contains(got, c.stderr) {
				t.Errorf("stderr %q, want it to contain %q", clip(got), c.stderr)
			}
			if len(got) > stderrHead {
				t.Errorf("the record quotes %d bytes of stderr, more than %d", len(got), stderrHead)
			}
		})
	}
}

// fatalWorker returns an executable that starts this test binary as a
// worker that dies of a Go fatal error on SIGUSR1 (workers start with an
// empty environment, so the wrapper sets the variable itself).
func fatalWorker(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fatal-worker")
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec '%s' \"$@\"\n", fatalOnUSR1, exe)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// TestScriptCausedDeaths: a worker that dies of what the script did ends
// the execution as the limit it hit or SCRIPT_ERROR, never INTERNAL.
func TestScriptCausedDeaths(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		mem   int64
		kinds []fault.Kind
	}{
		// One native split of a 32 MiB string into 32 Mi strings: the
		// worker runs out of memory inside the built-in (heap or thread
		// stacks, whichever the OS refuses first).
		{"split a 32 MiB string", `const p = "x".repeat(2 ** 25); return p.split("").length`, 64 << 20,
			[]fault.Kind{fault.KindMemoryLimit}},
		// Nesting the parser recurses on: the engine's bound (SCRIPT_ERROR)
		// or the worker's stack (SCRIPT_ERROR) or memory (MEMORY_LIMIT).
		{"JSON.parse nested 5e6 deep", `return JSON.parse("[".repeat(5e6) + "]".repeat(5e6)).length`, 256 << 20,
			[]fault.Kind{fault.KindScript, fault.KindMemoryLimit}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPool(t, Config{Workers: 1})
			l := testLimits()
			l.MemoryBytes = c.mem
			l.Timeout, l.CPUTime = time.Minute, time.Minute
			for i := 0; i < 2; i++ {
				job, _ := newJob(t, c.src, l)
				out := p.Run(context.Background(), job)
				ok := false
				for _, k := range c.kinds {
					ok = ok || out.Err != nil && out.Err.Kind == k
				}
				if !ok {
					t.Fatalf("run %d: %v (cause %v), want one of %v", i, out.Err, causeOf(out.Err), c.kinds)
				}
			}
		})
	}
}

func causeOf(fe *fault.Error) error {
	if fe == nil {
		return nil
	}
	return fe.Cause
}

// TestMemoryNotChargedToNext: an execution that held hundreds of MiB and
// threw leaves its worker clean; the next execution on that worker, under
// a small limit, is charged for its own heap only.
func TestMemoryNotChargedToNext(t *testing.T) {
	p := newPool(t, Config{Workers: -1, MaxWorkers: 1})
	heavy := testLimits()
	heavy.MemoryBytes = 1 << 30
	heavy.Timeout, heavy.CPUTime = time.Minute, time.Minute
	small := testLimits()
	small.MemoryBytes = 32 << 20
	rounds := 6
	if raceEnabled {
		// Each heavy execution takes the race detector minutes on a loaded
		// machine; two show the memory is not charged to the next.
		rounds = 2
		heavy.Timeout, heavy.CPUTime = 5*time.Minute, 5*time.Minute
	}
	for i := 0; i < rounds; i++ {
		job, _ := newJob(t, `let a = []; for (let i = 0; i < 4e5; i++) a = [a, "n" + i]; throw new Error("done")`, heavy)
		if out := p.Run(context.Background(), job); out.Err == nil || out.Err.Kind != fault.KindScript {
			t.Fatalf("heavy execution %d: %v", i, out.Err)
		} else if out.PeakMemoryBytes < 2*small.MemoryBytes {
			t.Fatalf("the heavy execution peaked at only %d MiB", out.PeakMemoryBytes>>20)
		}
		job, _ = newJob(t, `return 1 + 1`, small)
		if out := p.Run(context.Background(), job); out.Err != nil || string(out.Result) != "2" {
			t.Fatalf("after heavy execution %d, a trivial one under %d MiB: %s %v", i, small.MemoryBytes>>20, out.Result, out.Err)
		}
	}
	if s := p.Stats(); s.Started != 1 {
		t.Errorf("stats %+v: the worker should have been kept", s)
	}
}
