package python

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/pyinterp"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
)

// newEngine returns an engine of its own keeping warm interpreters
// started, closed when the test ends.
func newEngine(t *testing.T, warm int) *Engine {
	t.Helper()
	mod, err := pyinterp.Load("", "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), Config{Module: mod, CacheDir: filepath.Join(os.TempDir(), "ptc-python-test-cache"), Warm: warm})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// TestFreshAndWarmAgree runs each job on an interpreter started for it
// and on one started ahead of it: the same result, the same failure, the
// same logs — the job's determinism, limits and classification are
// applied when the job begins, not when the interpreter starts.
func TestFreshAndWarmAgree(t *testing.T) {
	start := time.Date(2030, 5, 1, 0, 0, 0, 0, time.UTC)
	det := core.Determinism{Deterministic: true, Seed: 7, ClockStart: start, ClockStartSet: true}
	cases := []struct {
		name  string
		src   string
		input string
		lim   limits.Limits
		det   bool
		kind  fault.Kind
	}{
		{name: "result and input", src: "return [input, 1]", input: `{"a":1}`},
		{name: "deterministic sources", det: true, src: `import random, uuid, time, os
t0 = time.monotonic()
return [random.random(), str(uuid.uuid4()), os.urandom(4).hex(), time.time(), time.monotonic() > t0,
        list({"apple", "pear", "fig", "kiwi", "plum", "lime"}), hash("abc")]`},
		{name: "logs", src: "print('one')\nimport logging\nlogging.warning('two')\nreturn 1"},
		{name: "syntax error", src: "x = (1,\nreturn x", kind: fault.KindSyntax},
		{name: "script error", src: "await tools.fail()", kind: fault.KindScript},
		{name: "timeout", src: "while True:\n    pass", lim: limits.Limits{Timeout: time.Second}, kind: fault.KindTimeout},
		{name: "cpu", src: "while True:\n    pass", lim: limits.Limits{CPUTime: time.Second, Timeout: time.Minute}, kind: fault.KindCPULimit},
		{name: "memory", src: "x = bytearray(256 * 1024 * 1024)", lim: limits.Limits{MemoryBytes: 64 << 20}, kind: fault.KindMemoryLimit},
		{name: "output", src: "return 'x' * 5000", lim: limits.Limits{MaxOutputBytes: 1000}, kind: fault.KindOutputLimit},
		{name: "tool calls", src: "for i in range(5):\n    await tools.echo(i=i)", lim: limits.Limits{MaxToolCalls: 3}, kind: fault.KindToolCallLimit},
	}
	e := engine(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var outs [2]string
			for i, warm := range []bool{false, true} {
				j, d := job(c.src, c.input, c.lim, testTools(t))
				if c.det {
					j.Determinism = det
				}
				run := e.runFresh
				if warm {
					waitWarm(t, e, 1)
					w := e.pool.take(j.Limits.MemoryBytes)
					if w == nil {
						t.Fatal("no interpreter fits the job")
					}
					run = func(ctx context.Context, job *runtime.Job, caller bridge.Caller) *runtime.Outcome {
						res, ok := e.runWarm(ctx, job, caller, w)
						if !ok {
							t.Fatal("the warm interpreter did not take the job")
						}
						return res
					}
				}
				res := run(context.Background(), j, d)
				if c.kind == 0 && res.Err != nil {
					t.Fatalf("warm %v: %v", warm, res.Err)
				}
				if c.kind != 0 && (res.Err == nil || res.Err.Kind != c.kind) {
					t.Fatalf("warm %v: err = %v, want %v", warm, res.Err, c.kind)
				}
				if c.kind == 0 && res.CPUTime <= 0 {
					t.Fatalf("no CPU time charged")
				}
				logs, _ := j.Logs.Entries()
				var msgs []string
				for _, l := range logs {
					msgs = append(msgs, l.Level+" "+l.Message)
				}
				b, _ := json.Marshal(struct {
					R json.RawMessage
					L []string
					E string
					P [2]int
				}{res.Result, msgs, errText(res.Err), errPos(res.Err)})
				outs[i] = string(b)
			}
			if outs[0] != outs[1] {
				t.Fatalf("fresh %s\nwarm  %s", outs[0], outs[1])
			}
		})
	}
}

// errText and errPos are what a comparison of failures looks at.
func errText(fe *fault.Error) string {
	if fe == nil {
		return ""
	}
	return fe.Kind.String() + ": " + fe.Message
}

func errPos(fe *fault.Error) [2]int {
	if fe == nil {
		return [2]int{}
	}
	return [2]int{fe.Line, fe.Column}
}

// TestWarmRandomness: jobs that are not deterministic draw from the
// host's random source when they begin, whatever the interpreter drew
// when it started.
func TestWarmRandomness(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		out, _ := run(t, "import os, random\nreturn [os.urandom(8).hex(), random.random()]", "", limits.Limits{})
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		if seen[string(out.Result)] {
			t.Fatalf("%s twice", out.Result)
		}
		seen[string(out.Result)] = true
	}
}

// TestPool: the pool keeps its size, replaces an interpreter that dies
// while it waits, leaves out those a job's memory limit does not fit, and
// Close ends every goroutine it started.
func TestPool(t *testing.T) {
	// The shared engine's pool is full, so that its goroutines stay put.
	waitWarm(t, engine(t), 2)
	leaks := goleak.IgnoreCurrent()
	e := newEngine(t, 2)
	p := e.pool
	waitWarm(t, e, 2)

	t.Run("memory limit below what an interpreter holds", func(t *testing.T) {
		if w := p.take(1 << 20); w != nil {
			t.Fatal("took an interpreter holding more than 1 MiB for a job limited to 1 MiB")
		}
		if n := p.waiting(); n != 2 {
			t.Fatalf("%d waiting, want 2", n)
		}
	})
	t.Run("dead interpreter replaced", func(t *testing.T) {
		n0 := p.count()
		p.mu.Lock()
		w := p.idle[0]
		p.mu.Unlock()
		w.inst.Close()
		for p.count() < n0+1 || p.waiting() < 2 {
			<-p.added
		}
		p.mu.Lock()
		for _, x := range p.idle {
			if x == w {
				t.Error("the dead interpreter is still in the pool")
			}
		}
		p.mu.Unlock()
	})
	t.Run("taken interpreter replaced", func(t *testing.T) {
		n0 := p.count()
		j, _ := job("return 1", "", limits.Limits{}, testTools(t))
		if out := e.Run(context.Background(), j); out.Err != nil || string(out.Result) != "1" {
			t.Fatalf("result %s, err %v", out.Result, out.Err)
		}
		for p.count() < n0+1 || p.waiting() < 2 {
			<-p.added
		}
	})
	t.Run("a start waits for the running job while one waits", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		hold := tools.Tool{Definition: tools.Definition{Name: "hold"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			close(entered)
			<-release
			return json.RawMessage("1"), nil
		}}
		j, _ := job("return await tools.hold()", "", limits.Limits{}, testTools(t, hold))
		n0 := p.count()
		ran := make(chan *runtime.Outcome)
		go func() { ran <- e.Run(context.Background(), j) }()
		<-entered
		// One interpreter waits and a job runs: no start now.
		if p.short() {
			t.Error("the pool would start an interpreter beside the running job while one waits")
		}
		// With none waiting, the next request must not wait: one starts
		// while the job still runs.
		w := p.take(0)
		if w == nil {
			t.Fatal("no interpreter waited")
		}
		w.inst.Close()
		p.done()
		for p.waiting() < 1 {
			<-p.added
		}
		close(release)
		if out := <-ran; out.Err != nil || string(out.Result) != "1" {
			t.Fatalf("result %s, err %v", out.Result, out.Err)
		}
		// The job ended: the pool fills up again.
		for p.count() < n0+2 || p.waiting() < 2 {
			<-p.added
		}
	})
	t.Run("close", func(t *testing.T) {
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Closed while it starts its first interpreter.
		newEngine(t, 1).Close(context.Background())
		goleak.VerifyNone(t, leaks)
	})
}
