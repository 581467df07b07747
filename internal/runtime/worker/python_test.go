package worker

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/pyinterp"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
)

// interp is the pinned interpreter, loaded once per test binary.
var interp struct {
	once sync.Once
	in   *PythonInterpreter
	err  error
}

// pythonInterpreter returns the pinned interpreter (npm ci installs it),
// with warm interpreters kept started ahead. Without it the test is
// skipped, except in CI, where it fails.
func pythonInterpreter(t testing.TB, warm int) *PythonInterpreter {
	t.Helper()
	if testing.Short() {
		t.Skip("compiles the Python interpreter")
	}
	interp.once.Do(func() {
		mod, err := pyinterp.Load("", "")
		if err != nil {
			interp.err = err
			return
		}
		interp.in, interp.err = NewPythonInterpreter(mod, 0)
	})
	if interp.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(interp.err)
		}
		t.Skipf("no Python interpreter (npm ci installs it): %v", interp.err)
	}
	in := *interp.in
	in.Warm = warm
	return &in
}

// pythonJob is a Python job with the test tools.
func pythonJob(t testing.TB, src string, l limits.Limits, extra ...tools.Tool) *ptcruntime.Job {
	t.Helper()
	job, _ := newJob(t, src, l, extra...)
	job.Language = core.LanguagePython
	return job
}

// TestPythonInWorkers: a Python script runs in a worker process (the
// worker, not this process, is busy while it waits on a call, and killing
// it ends the execution as it ends a JavaScript one), its tool calls
// cross to the supervisor, each limit ends it with its kind, and the
// worker compiles the interpreter once.
func TestPythonInWorkers(t *testing.T) {
	in := pythonInterpreter(t, 1)
	p := newPool(t, Config{Workers: 1})

	t.Run("tool calls", func(t *testing.T) {
		src := "r = await tools.math.add(a=1, b=2)\n" +
			"try:\n    await tools.fail()\nexcept ToolError as e:\n    return [r, e.code, input]"
		out := p.RunPython(context.Background(), pythonJob(t, src, testLimits()), in)
		if out.Err != nil || string(out.Result) != `[{"sum":3},"not_found",{"n":3}]` {
			t.Fatalf("%s %v", out.Result, out.Err)
		}
	})
	t.Run("logs", func(t *testing.T) {
		job := pythonJob(t, "print('hello')\nreturn 1", testLimits())
		if out := p.RunPython(context.Background(), job, in); out.Err != nil {
			t.Fatal(out.Err)
		}
		logs, _ := job.Logs.Entries()
		if len(logs) != 1 || logs[0].Message != "hello" {
			t.Fatalf("logs %+v", logs)
		}
	})
	t.Run("limits", func(t *testing.T) {
		lim := func(f func(*limits.Limits)) limits.Limits {
			l := testLimits()
			l.Timeout, l.CPUTime = time.Minute, 30*time.Second
			f(&l)
			return l
		}
		cases := []struct {
			name string
			src  string
			lim  limits.Limits
			kind fault.Kind
		}{
			{"timeout computing", "while True:\n    pass", lim(func(l *limits.Limits) { l.Timeout = 2 * time.Second }), fault.KindTimeout},
			{"cpu", "while True:\n    pass", lim(func(l *limits.Limits) { l.CPUTime = time.Second }), fault.KindCPULimit},
			{"memory at once", "x = bytearray(256 * 1024 * 1024)", lim(func(l *limits.Limits) { l.MemoryBytes = 64 << 20 }), fault.KindMemoryLimit},
			{"tool calls", "for i in range(5):\n    await tools.echo(i=i)", lim(func(l *limits.Limits) { l.MaxToolCalls = 3 }), fault.KindToolCallLimit},
			{"output", "return 'x' * 5000", lim(func(l *limits.Limits) { l.MaxOutputBytes = 1000 }), fault.KindOutputLimit},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				out := p.RunPython(context.Background(), pythonJob(t, c.src, c.lim), in)
				if out.Err == nil || out.Err.Kind != c.kind {
					t.Fatalf("outcome %s %v, want %s", out.Result, out.Err, c.kind)
				}
				if out.Err.Limit == 0 {
					t.Errorf("breach %v has no limit", out.Err)
				}
				// A worker stopped for a breach is replaced (and its successor
				// compiles the interpreter): the next script runs.
				if next := p.RunPython(context.Background(), pythonJob(t, "return 2", testLimits()), in); next.Err != nil || string(next.Result) != "2" {
					t.Fatalf("next execution: %s %v", next.Result, next.Err)
				}
			})
		}
	})
	t.Run("kill -9 mid-execution", func(t *testing.T) {
		entered, release := make(chan struct{}, 1), make(chan struct{})
		defer close(release)
		job := pythonJob(t, "await tools.block()\nreturn 1", testLimits(), blockingTool(entered, release))
		res := make(chan *fault.Error, 1)
		go func() { res <- p.RunPython(context.Background(), job, in).Err }()
		<-entered
		pid := busyPID(t, p)
		if pid == os.Getpid() {
			t.Fatal("the Python script runs in this process")
		}
		if err := killPID(pid); err != nil {
			t.Fatal(err)
		}
		fe := <-res
		if fe == nil || fe.Kind != fault.KindInternal || !strings.Contains(fe.Message, "killed") {
			t.Fatalf("error %v, want INTERNAL naming the kill (as for JavaScript)", fe)
		}
	})
}

// TestPythonCompiledOncePerWorker: a worker makes its Python engine from
// the first Compile frame; later executions name the interpreter by hash.
func TestPythonCompiledOncePerWorker(t *testing.T) {
	in := pythonInterpreter(t, 0)
	p := newPool(t, Config{Workers: 1, MaxWorkers: 1})
	for i := range 3 {
		out := p.RunPython(context.Background(), pythonJob(t, "return 40 + 2", testLimits()), in)
		if out.Err != nil || string(out.Result) != "42" {
			t.Fatalf("run %d: %s %v", i, out.Result, out.Err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.procs) != 1 {
		t.Fatalf("%d workers, want 1", len(p.procs))
	}
	for w := range p.procs {
		if !w.holds(in.SHA256) {
			t.Fatal("the worker is not known to hold the interpreter")
		}
	}
}
