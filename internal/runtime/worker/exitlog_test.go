package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
)

// deathRecords returns the "worker process died" records of sink.
func deathRecords(t *testing.T, sink *logSink) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range sink.records(t) {
		if r["msg"] == "worker process died" {
			out = append(out, r)
		}
	}
	return out
}

// TestPoolKillsAreNotDeaths: a worker the pool ends itself — the pool
// closing while the worker is still starting or while it runs an
// execution, a script stopped at its deadline or cancelled, a WebAssembly
// guest stopped at its CPU or memory limit, a worker retired after its
// quota or stopped when idle — is not logged as a worker that died, and
// is not counted in Stats.Died (which the metrics export as deaths);
// where the pool's decision has a counter of its own, that counter moved.
// (A worker killed from outside still is: TestWorkerCrashOutputLogged.)
func TestPoolKillsAreNotDeaths(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, sink *logSink) *Pool
	}{
		{"closed while a worker starts", closeWhileStarting},
		{"closed while a worker runs", func(t *testing.T, sink *logSink) *Pool {
			p := newPool(t, Config{Workers: 1, Logger: sink.logger()})
			entered := make(chan struct{}, 1)
			job, _ := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered))
			res := make(chan *fault.Error, 1)
			go func() { res <- p.Run(context.Background(), job).Err }()
			<-entered
			_ = p.Close()
			if fe := <-res; fe == nil || fe.Kind != fault.KindCancelled {
				t.Fatalf("error %v, want CANCELLED", fe)
			}
			return p
		}},
		{"a script stopped at its deadline", func(t *testing.T, sink *logSink) *Pool {
			p := newPool(t, Config{Workers: 1, Logger: sink.logger()})
			l := testLimits()
			l.Timeout, l.CPUTime = 200*time.Millisecond, time.Minute
			job, _ := newJob(t, `for (;;) {}`, l)
			if out := p.Run(context.Background(), job); out.Err == nil || out.Err.Kind != fault.KindTimeout {
				t.Fatalf("got %v, want TIMEOUT", out.Err)
			}
			return p
		}},
		{"a script cancelled by its caller", func(t *testing.T, sink *logSink) *Pool {
			p := newPool(t, Config{Workers: 1, Logger: sink.logger()})
			entered := make(chan struct{}, 1)
			job, _ := newJob(t, `await tools.block({}); for (;;) {}`, testLimits(), blockingTool(entered))
			ctx, cancel := context.WithCancel(context.Background())
			res := make(chan *fault.Error, 1)
			go func() { res <- p.Run(ctx, job).Err }()
			<-entered
			cancel()
			if fe := <-res; fe == nil || fe.Kind != fault.KindCancelled {
				t.Fatalf("error %v, want CANCELLED", fe)
			}
			return p
		}},
		{"a worker retired after its quota", func(t *testing.T, sink *logSink) *Pool {
			p := newPool(t, Config{Workers: 1, RecycleAfter: 1, Logger: sink.logger()})
			for i := 0; i < 3; i++ {
				job, _ := newJob(t, `return 1`, testLimits())
				if out := p.Run(context.Background(), job); out.Err != nil {
					t.Fatal(out.Err)
				}
			}
			waitFor(t, p, "the workers to be recycled", func() bool { return p.Stats().Recycled >= 2 })
			return p
		}},
		{"idle workers stopped", func(t *testing.T, sink *logSink) *Pool {
			p := newPool(t, Config{Workers: 1, MaxWorkers: 3, IdleTimeout: time.Hour, Logger: sink.logger()})
			entered, release := make(chan struct{}, 2), make(chan struct{})
			res := make(chan *fault.Error, 2)
			for i := 0; i < 2; i++ {
				job, _ := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered, release))
				go func() { res <- p.Run(context.Background(), job).Err }()
			}
			<-entered
			<-entered
			close(release)
			for i := 0; i < 2; i++ {
				if fe := <-res; fe != nil {
					t.Fatal(fe)
				}
			}
			waitFor(t, p, "the pool to finish starting workers", func() bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				return p.spawning == 0
			})
			p.mu.Lock()
			for w := range p.procs {
				w.idleSince = time.Now().Add(-2 * time.Hour)
			}
			p.mu.Unlock()
			p.shrinkIdle()
			waitFor(t, p, "the pool to shrink", func() bool { return p.Stats().Shrunk >= 1 })
			return p
		}},
		{"a guest stopped at its CPU limit", func(t *testing.T, sink *logSink) *Pool {
			p := newPool(t, Config{Workers: 1, Logger: sink.logger()})
			job := newWASMJob(t, guest(t, "spinner"), ``, func(j *ptcruntime.Job) {
				j.Limits.CPUTime = 100 * time.Millisecond
				j.Limits.Timeout = time.Minute
			})
			if out := p.Run(context.Background(), job); out.Err == nil || out.Err.Kind != fault.KindCPULimit {
				t.Fatalf("got %v, want CPU_LIMIT", out.Err)
			}
			return p
		}},
		{"a guest stopped at its memory limit", func(t *testing.T, sink *logSink) *Pool {
			p := newPool(t, Config{Workers: 1, Logger: sink.logger()})
			job := newWASMJob(t, guest(t, "memgrow"), `{"step_kib": 1024}`, func(j *ptcruntime.Job) {
				j.Limits.MemoryBytes = 32 << 20
				j.Limits.CPUTime, j.Limits.Timeout = time.Minute, time.Minute
			})
			if out := p.Run(context.Background(), job); out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
				t.Fatalf("got %v, want MEMORY_LIMIT", out.Err)
			}
			return p
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sink logSink
			p := c.run(t, &sink)
			// Close waits for every worker's reader, which logs its end.
			_ = p.Close()
			if d := deathRecords(t, &sink); len(d) != 0 {
				t.Errorf("logged as deaths: %v", d)
			}
			if s := p.Stats(); s.Died != 0 {
				t.Errorf("stats %+v, want no death", s)
			}
		})
	}
}

// closeWhileStarting closes a pool while one of its warm workers is still
// starting: the worker's executable (a wrapper of this test binary) waits
// on a FIFO before it becomes the worker, and is released only once Close
// has begun, so the worker finishes starting into a closed pool, which
// stops it.
func closeWhileStarting(t *testing.T, sink *logSink) *Pool {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fifo, marker := filepath.Join(dir, "go"), filepath.Join(dir, "first-started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first worker (NewPool starts it synchronously) starts at once;
	// every later one waits for a line on the FIFO. Shell built-ins only:
	// workers start with an empty environment.
	wrapper := filepath.Join(dir, "worker")
	script := fmt.Sprintf("#!/bin/sh\nif [ -e '%s' ]; then read line < '%s'; fi\n: > '%s'\nexec '%s' \"$@\"\n", marker, fifo, marker, exe)
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, Config{Workers: 2, Executable: wrapper, StartTimeout: time.Minute, Logger: sink.logger()})
	closed := make(chan struct{})
	// The closing goroutine ends when Close returns: after the released
	// worker has started and been stopped.
	go func() { _ = p.Close(); close(closed) }()
	waitFor(t, p, "the pool to close", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.closed && p.spawning == 1
	})
	// Opening the FIFO for writing blocks until the waiting wrapper has
	// it open for reading.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	<-closed
	if s := p.Stats(); s.Started != 2 {
		t.Fatalf("stats %+v, want the second worker started", s)
	}
	return p
}
