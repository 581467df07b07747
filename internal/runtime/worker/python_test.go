package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/pyinterp"
	"github.com/ptcrun/ptc/internal/python"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	wp "github.com/ptcrun/ptc/internal/workerproto"
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
// it ends the execution as it ends a JavaScript one), the worker compiles
// the interpreter once, its tool calls cross to the supervisor, the
// contract and hostile scripts behave as in-process, and each limit ends
// it with its kind. One pool serves every subtest: a worker compiles the
// interpreter on its first Python execution (seconds), so the subtests
// that stop their worker come last.
func TestPythonInWorkers(t *testing.T) {
	in := pythonInterpreter(t, 1)
	p := newPool(t, Config{Workers: 1, MaxWorkers: 1})

	t.Run("compiled once per worker", func(t *testing.T) {
		// The first request's context ends long before the worker has
		// compiled the interpreter (seconds): it ends TIMEOUT, and the
		// worker keeps what it compiled for the next ones.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		first := p.RunPython(ctx, pythonJob(t, "return 1", testLimits()), in)
		if first.Err == nil || first.Err.Kind != fault.KindTimeout || !strings.Contains(first.Err.Message, "compiled the Python interpreter") {
			t.Fatalf("first request: %s %v, want TIMEOUT while the interpreter compiled", first.Result, first.Err)
		}
		var pids []int
		p.mu.Lock()
		for w := range p.procs {
			pids = append(pids, w.pid)
		}
		p.mu.Unlock()
		for i := range 3 {
			out := p.RunPython(context.Background(), pythonJob(t, "return 40 + 2", testLimits()), in)
			if out.Err != nil || string(out.Result) != "42" {
				t.Fatalf("run %d: %s %v", i, out.Result, out.Err)
			}
			p.mu.Lock()
			for w := range p.procs {
				if !w.holds(in.SHA256) {
					t.Error("the worker is not known to hold the interpreter")
				}
				pids = append(pids, w.pid)
			}
			p.mu.Unlock()
		}
		if len(pids) != 4 || pids[0] != pids[1] || pids[1] != pids[2] || pids[2] != pids[3] {
			t.Fatalf("workers %v, want the same one for every run", pids)
		}
	})

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
	t.Run("parity with in-process", func(t *testing.T) { pythonParity(t, p, in) })
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
				// The peak is memory, never a CPU or time breach's
				// observed nanoseconds.
				if c.kind != fault.KindMemoryLimit && out.PeakMemoryBytes > c.lim.MemoryBytes {
					t.Errorf("peak memory %d bytes above the %d-byte limit after a %s breach", out.PeakMemoryBytes, c.lim.MemoryBytes, c.kind)
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

// inprocPython is an in-process Python engine for the parity test,
// compiled once per test binary (from the cache directory the Python
// engine's own tests fill).
var inprocPython struct {
	once sync.Once
	e    *python.Engine
	err  error
}

// pythonParity runs a representative set of the Python contract and
// hostile scripts on the in-process engine and in a worker of p, and
// compares results, errors (kind, message, line), logs and tool traces.
func pythonParity(t *testing.T, p *Pool, in *PythonInterpreter) {
	inprocPython.once.Do(func() {
		mod, err := pyinterp.Load("", "")
		if err != nil {
			inprocPython.err = err
			return
		}
		inprocPython.e, inprocPython.err = python.New(context.Background(), python.Config{Module: mod,
			CacheDir: filepath.Join(os.TempDir(), "ptc-python-test-cache")})
	})
	if inprocPython.err != nil {
		t.Fatal(inprocPython.err)
	}
	t.Cleanup(func() { _ = inprocPython.e.Close(context.Background()) })
	cases := []struct {
		name, src string
		// det runs the script deterministically (seeded random, virtual
		// clock).
		det bool
	}{
		{name: "deterministic random, clock and uuid", src: "import random, time, uuid, datetime\nreturn [random.random(), time.time(), str(uuid.uuid4()), datetime.datetime.now().isoformat()]", det: true},
		{name: "return", src: "return {'a': [1, 2.5, None, True, 'x'], 'in': input}"},
		{name: "keyword call", src: "return await tools.echo(member_id='e1', quarter='Q3')"},
		{name: "dotted name by item", src: "return await tools['math.add']({'a': 1, 'b': 2})"},
		{name: "gather", src: "import asyncio\nreturn await asyncio.gather(tools.echo(i=1), tools.math.add(a=2, b=3))"},
		{name: "ToolError caught", src: "try:\n    await tools.fail({})\nexcept ToolError as e:\n    return [e.code, e.message, e.tool, e.name]"},
		{name: "ToolError uncaught", src: "x = 1\n\nawait tools.fail({})\n"},
		{name: "syntax error", src: "x = (1,\nreturn x"},
		{name: "not serialisable", src: "return object()"},
		{name: "print and logging", src: "import logging\nprint('a', 1)\nlogging.warning('w')\nreturn 1"},
		{name: "printed call line is a log", src: "print('{\"call\": 1, \"name\": \"echo\", \"args\": {}}')\nreturn 1"},
		{name: "search", src: "hits = await tools.search('adds a and b')\nreturn hits[0]['name']"},
		{name: "host file", src: "open('/etc/passwd').read()"},
		{name: "socket", src: "import socket\nsocket.socket().connect(('127.0.0.1', 80))"},
		{name: "os.system", src: "import os\nos.system('ls')"},
		{name: "ctypes", src: "__import__('ctypes')"},
		{name: "deep recursion", src: "def f(n):\n    return f(n + 1)\nf(0)"},
		{name: "huge int to text", src: "return str(10**5000)"},
		{name: "protocol line written to fd 1, computing on", src: "import os\ntry:\n    os.write(1, b'hello\\n')\nexcept OSError:\n    pass\nwhile True:\n    pass"},
		{name: "tool call budget caught", src: "await tools.echo()\ntry:\n    await tools.echo()\nexcept ToolError as e:\n    return [e.name, e.code]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var runs []string
			for _, mode := range []string{"in-process", "worker"} {
				l := testLimits()
				l.MaxToolCalls = 1
				if !strings.Contains(c.name, "budget") {
					l.MaxToolCalls = 10
				}
				job, d := newJob(t, c.src, l)
				job.Language = core.LanguagePython
				if c.det {
					job.Determinism = core.Determinism{Deterministic: true, Seed: 42, ClockStart: time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)}
				}
				var out *ptcruntime.Outcome
				if mode == "worker" {
					out = p.RunPython(context.Background(), job, in)
				} else {
					out = inprocPython.e.Run(context.Background(), job)
				}
				var trace []string
				for _, r := range d.Trace() {
					trace = append(trace, traceLine(r))
				}
				logs, _ := job.Logs.Entries()
				var lines []string
				for _, e := range logs {
					lines = append(lines, e.Level+":"+e.Message)
				}
				msg := ""
				if out.Err != nil {
					msg = fmt.Sprintf("%s %s line %d col %d", out.Err.Kind, out.Err.Message, out.Err.Line, out.Err.Column)
				}
				runs = append(runs, fmt.Sprintf("%s|%s|%s|%s", out.Result, msg, strings.Join(lines, ";"), strings.Join(trace, ";")))
			}
			if runs[0] != runs[1] {
				t.Fatalf("in-process %s\nworker     %s", runs[0], runs[1])
			}
		})
	}
}

// TestRunPythonRefused: a Python job the pool cannot run ends INTERNAL
// with why: on an in-process pool, without an interpreter, and with a
// module a worker cannot make its Python engine from (it is not the
// interpreter); an Execute frame naming no interpreter is refused.
func TestRunPythonRefused(t *testing.T) {
	empty := []byte("\x00asm\x01\x00\x00\x00")
	sum := sha256.Sum256(empty)
	notPython := &PythonInterpreter{Module: empty, SHA256: hex.EncodeToString(sum[:])}
	cases := []struct {
		name string
		mode Mode
		in   *PythonInterpreter
		msg  string
	}{
		{"in-process pool", ModeInProcess, notPython, "does not run Python"},
		{"no interpreter", ModeWorker, nil, "no Python interpreter"},
		{"not the interpreter", ModeWorker, notPython, "could not compile"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPool(t, Config{Mode: c.mode, Workers: -1})
			out := p.RunPython(context.Background(), pythonJob(t, "return 1", testLimits()), c.in)
			if out.Err == nil || out.Err.Kind != fault.KindInternal || !strings.Contains(out.Err.Message, c.msg) {
				t.Fatalf("outcome %s %v, want INTERNAL containing %q", out.Result, out.Err, c.msg)
			}
		})
	}
	t.Run("compile past its bound", func(t *testing.T) {
		in := pythonInterpreter(t, 0)
		defer func(d time.Duration) { pythonCompileTimeout = d }(pythonCompileTimeout)
		pythonCompileTimeout = time.Millisecond
		p := newPool(t, Config{Workers: -1})
		out := p.RunPython(context.Background(), pythonJob(t, "return 1", testLimits()), in)
		if out.Err == nil || out.Err.Kind != fault.KindInternal || !strings.Contains(out.Err.Message, "did not compile the Python interpreter within") {
			t.Fatalf("outcome %s %v, want INTERNAL naming the compile bound", out.Result, out.Err)
		}
	})
	t.Run("execute frame without the interpreter's hash", func(t *testing.T) {
		_, err := jobOf(&wp.Execute{Language: wp.Language_LANGUAGE_PYTHON, Limits: testLimits().Values()})
		if !errors.Is(err, errNoPython) {
			t.Fatalf("error %v, want %v", err, errNoPython)
		}
	})
}

// TestPythonCompileSlot: while another worker compiles the interpreter
// (the pool's one slot taken), an execution that needs a compile waits,
// and ends TIMEOUT at its deadline or CANCELLED with its caller, without
// a compile; its worker serves on, and once the slot is free the
// execution gets it.
func TestPythonCompileSlot(t *testing.T) {
	empty := []byte("\x00asm\x01\x00\x00\x00")
	sum := sha256.Sum256(empty)
	notPython := &PythonInterpreter{Module: empty, SHA256: hex.EncodeToString(sum[:])}
	p := newPool(t, Config{Workers: 1, MaxWorkers: 1})
	p.pyCompiles <- struct{}{} // another worker compiles
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// The caller's deadline: as an executor gives the pool (the
	// execution's own clock starts after the compile).
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	cases := []struct {
		name string
		ctx  context.Context
		kind fault.Kind
		msg  string
	}{
		{"deadline", short, fault.KindTimeout, "waiting for a worker to compile the Python interpreter"},
		{"caller cancels", cancelled, fault.KindCancelled, "cancelled by the caller"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := p.RunPython(c.ctx, pythonJob(t, "return 1", testLimits()), notPython)
			if out.Err == nil || out.Err.Kind != c.kind || !strings.Contains(out.Err.Message, c.msg) {
				t.Fatalf("outcome %s %v, want %s containing %q", out.Result, out.Err, c.kind, c.msg)
			}
		})
	}
	job, _ := newJob(t, `return 2`, testLimits())
	if out := p.Run(context.Background(), job); out.Err != nil || string(out.Result) != "2" {
		t.Fatalf("the worker after the waits: %s %v", out.Result, out.Err)
	}
	if st := p.Stats(); st.Died != 0 {
		t.Fatalf("a worker died: %+v", st)
	}
	<-p.pyCompiles // the other compile ends
	out := p.RunPython(context.Background(), pythonJob(t, "return 1", testLimits()), notPython)
	if out.Err == nil || !strings.Contains(out.Err.Message, "could not compile") {
		t.Fatalf("outcome %s %v, want the compile's own error once the slot is free", out.Result, out.Err)
	}
	if n := len(p.pyCompiles); n != 0 {
		t.Fatalf("%d compile slots held after the executions", n)
	}
}

// TestPyCPUWatchReportsPeak: the worker's CPU watch of a Python guest
// reports the guest's peak memory with its breach, and leaves out the CPU
// its thread spent waiting for answers.
func TestPyCPUWatchReportsPeak(t *testing.T) {
	type report struct {
		fe   *fault.Error
		cpu  time.Duration
		peak int64
	}
	got := make(chan report, 1)
	w := &pyCPUWatch{limit: time.Millisecond, waited: func() time.Duration { return time.Second },
		onBreach: func(fe *fault.Error, cpu time.Duration, peak int64) { got <- report{fe, cpu, peak} }}
	defer w.stop()
	w.arm(wasm.Meter{CPU: func() time.Duration { return time.Second + 5*time.Millisecond }, Peak: func() int64 { return 42 << 20 }})
	r := <-got
	if r.fe.Kind != fault.KindCPULimit || r.peak != 42<<20 || r.cpu != 5*time.Millisecond {
		t.Fatalf("breach %v, CPU %v, peak %d; want CPU_LIMIT, 5ms, %d", r.fe, r.cpu, r.peak, 42<<20)
	}
}
