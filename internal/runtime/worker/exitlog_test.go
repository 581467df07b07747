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
// execution, a WebAssembly guest stopped at its CPU or memory limit — is
// not logged as a worker that died, and is not counted in Stats.Died.
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
