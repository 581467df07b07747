package worker

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// memorySlack is the documented bound on the overshoot of a memory breach:
// the watchdog sees an allocation after it happened, so the observed value
// exceeds the limit by about one allocation (at most the limit itself for
// the doubling bombs below), and more if the script allocates again before
// the watchdog runs; RLIMIT_DATA, set per execution to twice the limit plus
// rlimitSlack above the memory in use, bounds it.
func memorySlack(limit int64) int64 { return limit + rlimitSlack }

func TestMemoryBombs(t *testing.T) {
	const limit = 64 << 20
	cases := []struct {
		name string
		src  string
	}{
		{"string doubling", `let s = "x"; for (;;) s += s;`},
		{"array push", `const a = []; for (let i = 0; ; i++) a.push({i, s: "item " + i});`},
		{"object graph", `let root = {}; let cur = root; for (let i = 0; ; i++) { cur.next = {a: [i, i + 1, i + 2], b: {c: "n" + i}}; cur = cur.next; }`},
		{"map of strings", `const m = new Map(); for (let i = 0; ; i++) m.set("key-" + i, "value-" + i);`},
	}
	p := newPool(t, Config{Workers: 1})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := testLimits()
			l.MemoryBytes = limit
			l.CPUTime = 30 * time.Second
			l.Timeout = 30 * time.Second
			job, _ := newJob(t, c.src, l)
			out := p.Run(context.Background(), job)
			if out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
				if out.Err != nil {
					t.Fatalf("error %v (cause: %v), want MEMORY_LIMIT", out.Err, out.Err.Cause)
				}
				t.Fatal("no error, want MEMORY_LIMIT")
			}
			if out.Err.Limit != limit {
				t.Errorf("Limit = %d, want %d", out.Err.Limit, limit)
			}
			if out.Err.Observed == 0 && strings.Contains(out.Err.Message, "worker process was stopped") {
				// The OS refused memory before the watchdog ran (a loaded
				// host): the death rule classified it; no observed value.
				t.Logf("%s: %v", c.name, out.Err)
			} else if out.Err.Observed <= limit || out.Err.Observed > limit+memorySlack(limit) {
				t.Errorf("Observed = %d MiB, want between %d and %d MiB", out.Err.Observed>>20, limit>>20, (limit+memorySlack(limit))>>20)
			}
			if out.PeakMemoryBytes < out.Err.Observed {
				t.Errorf("PeakMemoryBytes = %d, below the observed %d", out.PeakMemoryBytes, out.Err.Observed)
			}
			t.Logf("%s: observed %d MiB of %d MiB, peak %d MiB, cpu %s", c.name, out.Err.Observed>>20, limit>>20, out.PeakMemoryBytes>>20, out.CPUTime)
			// The pool replaced the worker: the next execution succeeds.
			next, _ := newJob(t, `return 1 + 1`, testLimits())
			if out := p.Run(context.Background(), next); out.Err != nil || string(out.Result) != "2" {
				t.Fatalf("next execution: %s %v", out.Result, out.Err)
			}
		})
	}
}

// TestSizeGuards checks that single native allocations beyond the memory
// limit become catchable RangeErrors.
func TestSizeGuards(t *testing.T) {
	cases := []struct{ name, expr string }{
		{"repeat", `"x".repeat(2 ** 30)`},
		{"padEnd", `"x".padEnd(2 ** 30)`},
		{"array fill", `new Array(3e8).fill(1)`},
		{"array fill range", `new Array(3e8).fill(1, 10)`},
		{"array join", `new Array(3e8).join("x")`},
		{"array toString", `String(new Array(3e8))`},
		{"array from", `Array.from({length: 3e8})`},
	}
	p := newPool(t, Config{Workers: 1})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := testLimits()
			src := "try { " + c.expr + "; return 'allocated' } catch (e) { return [e.name, e.message] }"
			job, _ := newJob(t, src, l)
			out := p.Run(context.Background(), job)
			if out.Err != nil {
				t.Fatalf("error %v", out.Err)
			}
			if !strings.HasPrefix(string(out.Result), `["RangeError"`) {
				t.Fatalf("result %s, want a RangeError", out.Result)
			}
		})
	}
	t.Run("an uncaught guard error points at the script", func(t *testing.T) {
		job, _ := newJob(t, "const n = 3e8;\nconst a = new Array(n).fill(1);\nreturn a.length", testLimits())
		out := p.Run(context.Background(), job)
		if out.Err == nil || out.Err.Kind != fault.KindScript || out.Err.Line != 2 || !strings.Contains(out.Err.Message, "RangeError") {
			t.Fatalf("got %+v", out.Err)
		}
		if !strings.HasPrefix(out.Err.Stack, "at script.js:2:") || strings.Contains(out.Err.Stack, "\n") {
			t.Errorf("stack %q, want the script's frame alone", out.Err.Stack)
		}
	})
	t.Run("the guards read the execution's own limit", func(t *testing.T) {
		// The runtime is made before the job: a limit of 8 MiB still
		// refuses 1e6 elements (16 MB), which 64 MiB allows.
		for _, c := range []struct {
			mem  int64
			want string
		}{{8 << 20, `"RangeError"`}, {64 << 20, `"filled"`}} {
			l := testLimits()
			l.MemoryBytes = c.mem
			job, _ := newJob(t, `try { new Array(1e6).fill(0); return "filled" } catch (e) { return e.name }`, l)
			if out := p.Run(context.Background(), job); out.Err != nil || string(out.Result) != c.want {
				t.Errorf("limit %d MiB: %s %v, want %s", c.mem>>20, out.Result, out.Err, c.want)
			}
		}
	})
	t.Run("small allocations still work", func(t *testing.T) {
		src := `const a = new Array(1000).fill(2); const b = new Uint8Array(16); const c = Array.from({length: 3}, (_, i) => i);
return [a.length, a[999], b.length, b instanceof Uint8Array, b.buffer instanceof ArrayBuffer, c.join("-"), String([1, 2]),
  new ArrayBuffer(8).byteLength, Uint8Array.from([1, 2]).length, Object.getPrototypeOf(b).constructor === Uint8Array]`
		job, _ := newJob(t, src, testLimits())
		out := p.Run(context.Background(), job)
		if out.Err != nil || string(out.Result) != `[1000,2,16,true,true,"0-1-2","1,2",8,2,true]` {
			t.Fatalf("got %s %v", out.Result, out.Err)
		}
	})
}

func TestCPULimit(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	l := testLimits()
	l.CPUTime = 100 * time.Millisecond
	job, _ := newJob(t, `let x = 0; for (;;) x++;`, l)
	out := p.Run(context.Background(), job)
	if out.Err == nil || out.Err.Kind != fault.KindCPULimit {
		t.Fatalf("error %v, want CPU_LIMIT", out.Err)
	}
	if out.Err.Limit != l.CPUTime.Nanoseconds() || out.Err.Observed < out.Err.Limit {
		t.Errorf("limit %d observed %d", out.Err.Limit, out.Err.Observed)
	}
	if out.CPUTime < l.CPUTime {
		t.Errorf("CPUTime %s below the limit", out.CPUTime)
	}
	next, _ := newJob(t, `return 2`, testLimits())
	if out := p.Run(context.Background(), next); out.Err != nil {
		t.Fatal(out.Err)
	}
}

// TestToolWaitIsNotCPU waits 2 s on a tool with a 100 ms CPU limit.
func TestToolWaitIsNotCPU(t *testing.T) {
	for _, mode := range []Mode{ModeWorker, ModeInProcess} {
		t.Run(mode.String(), func(t *testing.T) {
			p := newPool(t, Config{Mode: mode, Workers: 1})
			entered, release := make(chan struct{}, 1), make(chan struct{})
			l := testLimits()
			// Far below the 2 s wait, far above what starting the
			// script costs even when a collection of the test process's
			// heap charges its assists to the script's thread.
			l.CPUTime = 400 * time.Millisecond
			job, _ := newJob(t, `const r = await tools.block({}); return r.released`, l, blockingTool(entered, release))
			res := make(chan string, 1)
			go func() {
				out := p.Run(context.Background(), job)
				if out.Err != nil {
					res <- out.Err.Error()
					return
				}
				res <- string(out.Result) + " cpu " + out.CPUTime.String()
			}()
			<-entered
			// The wait itself is what is tested.
			<-time.After(2 * time.Second)
			close(release)
			got := <-res
			if !strings.HasPrefix(got, "true cpu ") {
				t.Fatalf("got %s", got)
			}
			t.Log(got)
		})
	}
}

func TestKillMidExecution(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	entered, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	job, _ := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered, release))
	res := make(chan *fault.Error, 1)
	go func() { res <- p.Run(context.Background(), job).Err }()
	<-entered
	pid := busyPID(t, p)
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	fe := <-res
	if fe == nil || fe.Kind != fault.KindInternal || !strings.Contains(fe.Message, "killed") {
		t.Fatalf("error %v, want INTERNAL naming the kill", fe)
	}
	if s := p.Stats(); s.Died != 1 {
		t.Errorf("stats %+v, want one death", s)
	}
	next, _ := newJob(t, `return 3`, testLimits())
	if out := p.Run(context.Background(), next); out.Err != nil || string(out.Result) != "3" {
		t.Fatalf("next execution: %s %v", out.Result, out.Err)
	}
}

// TestNonInterruptibleBuiltin parses a 40 MB JSON array of objects (one
// native call goja cannot interrupt) past the deadline: the worker is
// killed.
func TestNonInterruptibleBuiltin(t *testing.T) {
	p := newPool(t, Config{Workers: 1, KillGrace: 300 * time.Millisecond})
	l := testLimits()
	l.Timeout = time.Minute
	l.CPUTime = time.Minute
	l.MemoryBytes = 2 << 30
	// Building the text takes less than 1/25 of the time parsing it takes
	// (in one native call that makes five million objects). How long
	// depends on the machine and its load, so the deadline is set from a
	// build measured here and now: 8 times the build, about 3 times less
	// than the parse.
	const build = `const s = "[" + '{"a":1},'.repeat(5e6) + '{"a":1}]';`
	probe, _ := newJob(t, build+` return s.length`, l)
	start := time.Now()
	if out := p.Run(context.Background(), probe); out.Err != nil {
		t.Fatal(out.Err)
	}
	l.Timeout = max(time.Second, 8*time.Since(start)).Round(time.Millisecond)
	job, _ := newJob(t, build+` return JSON.parse(s).length`, l)
	start = time.Now()
	out := p.Run(context.Background(), job)
	if out.Err == nil || out.Err.Kind != fault.KindTimeout {
		t.Fatalf("error %v, want TIMEOUT", out.Err)
	}
	t.Logf("ended after %s: %v", time.Since(start), out.Err)
	// The kill is the pool's: counted once, as a kill, not as a death
	// nor a recycling.
	if s := p.Stats(); s.Killed != 1 || s.Died != 0 || s.Recycled != 0 {
		t.Errorf("stats %+v, want one kill and nothing else", s)
	}
	next, _ := newJob(t, `return 4`, testLimits())
	if out := p.Run(context.Background(), next); out.Err != nil {
		t.Fatal(out.Err)
	}
}

// TestSerialisationStopsItself: a result whose serialisation visits 400
// million properties for 120 KB of text runs past its deadline in native
// code; the serialisation looks at the clock itself, so the worker ends
// the execution with TIMEOUT and is not killed for it.
func TestSerialisationStopsItself(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	l := testLimits()
	l.Timeout = 300 * time.Millisecond
	job, _ := newJob(t, `const o = {}; for (let i = 0; i < 20000; i++) o["k" + i] = undefined; return new Array(20000).fill(o)`, l)
	out := p.Run(context.Background(), job)
	if out.Err == nil || out.Err.Kind != fault.KindTimeout || out.Result != nil {
		t.Fatalf("outcome %v, want TIMEOUT", out.Err)
	}
	if s := p.Stats(); s.Killed != 0 || s.Died != 0 {
		t.Errorf("stats %+v, want no kill and no death", s)
	}
}

func TestCancel(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	entered := make(chan struct{}, 1)
	job, d := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered))
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan *fault.Error, 1)
	go func() { res <- p.Run(ctx, job).Err }()
	<-entered
	cancel()
	fe := <-res
	if fe == nil || fe.Kind != fault.KindCancelled {
		t.Fatalf("error %v, want CANCELLED", fe)
	}
	if tr := d.Trace(); len(tr) != 1 || tr[0].ErrorCode != "cancelled" {
		t.Errorf("trace %+v", tr)
	}
	next, _ := newJob(t, `return 5`, testLimits())
	if out := p.Run(context.Background(), next); out.Err != nil {
		t.Fatal(out.Err)
	}
}

func TestRecycle(t *testing.T) {
	p := newPool(t, Config{Workers: -1, MaxWorkers: 1, RecycleAfter: 3})
	for i := 0; i < 7; i++ {
		job, _ := newJob(t, `return 1`, testLimits())
		if out := p.Run(context.Background(), job); out.Err != nil {
			t.Fatal(out.Err)
		}
	}
	if s := p.Stats(); s.Recycled < 2 {
		t.Errorf("stats %+v, want at least 2 recycled workers", s)
	}
}

func TestDensity(t *testing.T) {
	const n = 8
	p := newPool(t, Config{Workers: -1, ExecutionsPerWorker: 4, MaxWorkers: 2})
	entered, release := make(chan struct{}, n), make(chan struct{})
	errs := make(chan *fault.Error, n)
	for i := 0; i < n; i++ {
		job, _ := newJob(t, `const r = await tools.block({}); return r.released`, testLimits(), blockingTool(entered, release))
		go func() { errs <- p.Run(context.Background(), job).Err }()
	}
	for i := 0; i < n; i++ {
		<-entered
	}
	if s := p.Stats(); s.Alive != 2 {
		t.Errorf("%d workers alive for %d parked executions at 4 per worker, want 2", s.Alive, n)
	}
	close(release)
	for i := 0; i < n; i++ {
		if fe := <-errs; fe != nil {
			t.Error(fe)
		}
	}
}

func TestMaxWorkersQueue(t *testing.T) {
	p := newPool(t, Config{Workers: -1, MaxWorkers: 1})
	entered, release := make(chan struct{}, 1), make(chan struct{})
	job, _ := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered, release))
	first := make(chan *fault.Error, 1)
	go func() { first <- p.Run(context.Background(), job).Err }()
	<-entered
	// The only worker is busy: a second execution waits until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	second, _ := newJob(t, `return 2`, testLimits())
	if fe := p.Run(ctx, second).Err; fe == nil || fe.Kind != fault.KindTimeout {
		t.Errorf("queued execution: %v, want TIMEOUT", fe)
	}
	close(release)
	if fe := <-first; fe != nil {
		t.Fatal(fe)
	}
}

func TestInProcessMemoryBestEffort(t *testing.T) {
	p := newPool(t, Config{Mode: ModeInProcess})
	l := testLimits()
	l.MemoryBytes = 64 << 20
	job, _ := newJob(t, `let s = "x"; for (;;) s += s;`, l)
	out := p.Run(context.Background(), job)
	if out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
		t.Fatalf("error %v, want MEMORY_LIMIT", out.Err)
	}
}

// TestInProcessBaselineFollowsHeapDown: in-process, data that was live when
// an execution started and dies during it is not room for the script: the
// baseline follows the live heap down, so a bomb is stopped near its limit,
// not once it has also filled the space the dead data left.
func TestInProcessBaselineFollowsHeapDown(t *testing.T) {
	p := newPool(t, Config{Mode: ModeInProcess})
	held := make([][]byte, 400)
	for i := range held {
		held[i] = make([]byte, 1<<20)
		held[i][0] = 1
	}
	drop := tools.Tool{Definition: tools.Definition{Name: "drop", Description: "lets the test's data die",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			held = nil
			runtime.GC()
			return json.RawMessage(`{}`), nil
		}}
	l := testLimits()
	l.MemoryBytes = 64 << 20
	l.Timeout, l.CPUTime = time.Minute, time.Minute
	l.MaxLogBytes = 1 << 20
	// About 130 bytes a key: 64 MiB is some 500,000 keys (a line per
	// 100,000), 464 MiB (the limit plus the dead data) over 2 million.
	job, _ := newJob(t, `await tools.drop({}); const o = {}; for (let i = 1; ; i++) { o["key" + i] = i; if (i % 100000 === 0) console.log(i) }`, l, drop)
	out := p.Run(context.Background(), job)
	if out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
		t.Fatalf("error %v, want MEMORY_LIMIT", out.Err)
	}
	// 12 lines is the limit's own share; up to 16 leaves room for a
	// watchdog slowed by a loaded machine, well under the 20 the dead
	// data's room would allow.
	if entries, _ := job.Logs.Entries(); len(entries) > 16 {
		n := len(entries)
		t.Errorf("the script set %d00,000 keys under a 64 MiB limit: it was charged against the dead data's baseline", n)
	}
}

func TestRunWithoutToolsOrLogs(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	out := p.Run(context.Background(), ptcJob{Source: `console.log("dropped"); try { await tools.x({}) } catch (e) { return e.code }`, Limits: limits.Defaults()}.job())
	if out.Err != nil || string(out.Result) != `"unknown_tool"` {
		t.Fatalf("got %s %v", out.Result, out.Err)
	}
	// A module that is not one: SYNTAX_ERROR, as the engine says
	// in-process.
	wasm := p.Run(context.Background(), ptcJob{Module: []byte{0, 'a', 's', 'm'}}.job())
	if wasm.Err == nil || wasm.Err.Kind != fault.KindSyntax {
		t.Fatalf("wasm job: %v", wasm.Err)
	}
}

func TestClosedPool(t *testing.T) {
	p, err := NewPool(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	job, _ := newJob(t, `return 1`, testLimits())
	if fe := p.Run(context.Background(), job).Err; fe == nil || fe.Kind != fault.KindInternal {
		t.Fatalf("run on a closed pool: %v", fe)
	}
	if s := p.Stats(); s.Alive != 0 {
		t.Errorf("stats after close: %+v", s)
	}
}

func TestCloseFailsRunning(t *testing.T) {
	p, err := NewPool(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{}, 1)
	job, _ := newJob(t, `await tools.block({}); return 1`, testLimits(), blockingTool(entered))
	res := make(chan *fault.Error, 1)
	go func() { res <- p.Run(context.Background(), job).Err }()
	<-entered
	_ = p.Close()
	if fe := <-res; fe == nil || fe.Kind != fault.KindCancelled {
		t.Fatalf("error %v, want CANCELLED", fe)
	}
}

// TestDensityMemoryBreach runs a memory bomb beside three executions
// parked on a tool call in the same worker: only the bomb fails. The bomb
// allocates in small steps, so it stops at the watchdog's interrupt (one
// that is inside a long native call when the breach is reported is killed
// with its worker and the executions it shares, see docs/workers.md).
func TestDensityMemoryBreach(t *testing.T) {
	// The bomb stops at the watchdog's interrupt; a loaded machine must
	// not turn a slow stop into a kill of the worker the others share.
	p := newPool(t, Config{Workers: -1, ExecutionsPerWorker: 4, MaxWorkers: 1, breachGrace: 10 * time.Second})
	entered, release := make(chan struct{}, 3), make(chan struct{})
	errs := make(chan *fault.Error, 3)
	// The parked executions wait for as long as the bomb takes to stop,
	// which under the race detector on a loaded machine passes 10 s.
	parked := testLimits()
	parked.Timeout = 2 * time.Minute
	for i := 0; i < 3; i++ {
		job, _ := newJob(t, `const r = await tools.block({}); return r.released`, parked, blockingTool(entered, release))
		go func() { errs <- p.Run(context.Background(), job).Err }()
	}
	for i := 0; i < 3; i++ {
		<-entered
	}
	l := testLimits()
	l.MemoryBytes = 64 << 20
	l.Timeout, l.CPUTime = time.Minute, time.Minute
	bomb, _ := newJob(t, `const a = []; for (let i = 0; ; i++) a.push("x".repeat(4096) + i);`, l)
	if fe := p.Run(context.Background(), bomb).Err; fe == nil || fe.Kind != fault.KindMemoryLimit {
		t.Fatalf("bomb: %v, want MEMORY_LIMIT", fe)
	}
	close(release)
	for i := 0; i < 3; i++ {
		if fe := <-errs; fe != nil {
			t.Errorf("parked execution: %v", fe)
		}
	}
}
