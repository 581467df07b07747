package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// guests holds the example guests under examples/wasm, built once per test
// binary run (GOOS=wasip1).
var guests struct {
	once sync.Once
	dir  string
	err  error
}

func guest(t testing.TB, name string) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("builds Go guests")
	}
	guests.once.Do(func() {
		dir, err := os.MkdirTemp("", "ptc-worker-guests-")
		if err != nil {
			guests.err = err
			return
		}
		guests.dir = dir
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", dir+string(filepath.Separator),
			"./examples/wasm/minimal", "./examples/wasm/spinner", "./examples/wasm/memgrow", "./examples/wasm/batch", "./examples/wasm/callflood")
		cmd.Dir = filepath.Join("..", "..", "..")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			guests.err = fmt.Errorf("building the example guests: %v\n%s", err, out)
		}
	})
	if guests.err != nil {
		t.Fatal(guests.err)
	}
	b, err := os.ReadFile(filepath.Join(guests.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wasmJob is a WebAssembly job with the test tools.
func newWASMJob(t testing.TB, mod []byte, input string, mutate func(*ptcruntime.Job)) *ptcruntime.Job {
	job, _ := newJob(t, "", testLimits())
	job.Module, job.Input = mod, json.RawMessage(input)
	if mutate != nil {
		mutate(job)
	}
	return job
}

// TestWASMInWorkers runs WebAssembly guests in worker processes, where
// they run without loop checks, and checks what they give against the
// in-process engine, and the limits that stop them.
func TestWASMInWorkers(t *testing.T) {
	minimal := guest(t, "minimal")
	p := newPool(t, Config{Workers: 1})
	inproc, err := wasm.New(wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close(context.Background())

	t.Run("compiling is not the execution's time", func(t *testing.T) {
		// A fresh worker compiles the Go guest (a second or more) before
		// the execution starts: a short timeout still holds, for the
		// execution and for its tool calls.
		q := newPool(t, Config{Workers: -1})
		job := newWASMJob(t, minimal, `{"y":1}`, func(j *ptcruntime.Job) { j.Limits.Timeout = time.Second })
		if out := q.Run(context.Background(), job); out.Err != nil || string(out.Result) != `{"echo":{"y":1}}` {
			t.Fatalf("%s %v", out.Result, out.Err)
		}
		job = newWASMJob(t, guest(t, "batch"), `{"tool":"math.add","n":2,"args":{"a":1,"b":2}}`,
			func(j *ptcruntime.Job) { j.Limits.Timeout = time.Second })
		if out := q.Run(context.Background(), job); out.Err != nil || !strings.Contains(string(out.Result), `"sum":3`) {
			t.Fatalf("calls after compiling: %s %v", out.Result, out.Err)
		}
	})
	t.Run("the same outcomes as in-process", func(t *testing.T) {
		batch := guest(t, "batch")
		callflood := guest(t, "callflood")
		cases := []struct {
			name  string
			mod   []byte
			input string
		}{
			{"minimal", minimal, `{"x":[1,"two"]}`},
			{"batch of calls", batch, `{"tool":"math.add","n":6,"args":{"a":1,"b":2}}`},
			{"batch with failures", batch, `{"tool":"fail","n":3,"args":{}}`},
			{"calls until the budget", callflood, `{"tool":"echo","args":{}}`},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var runs []string
				for _, eng := range []ptcruntime.Engine{inproc, p} {
					job, d := newJob(t, "", testLimits())
					job.Module, job.Input = c.mod, json.RawMessage(c.input)
					job.Limits.MaxToolCalls = 10
					out := eng.Run(context.Background(), job)
					var trace []string
					for _, r := range d.Trace() {
						trace = append(trace, traceLine(r))
					}
					msg := ""
					if out.Err != nil {
						msg = out.Err.Kind.String() + " " + out.Err.Message
					}
					runs = append(runs, fmt.Sprintf("%s|%s|%s", out.Result, msg, strings.Join(trace, ";")))
				}
				if runs[0] != runs[1] {
					t.Fatalf("in-process %s\nworker     %s", runs[0], runs[1])
				}
			})
		}
	})
	t.Run("by hash, bytes sent once", func(t *testing.T) {
		job := newWASMJob(t, minimal, `1`, nil)
		if out := p.Run(context.Background(), job); out.Err != nil {
			t.Fatal(out.Err)
		}
		job = newWASMJob(t, nil, `2`, func(j *ptcruntime.Job) { j.ModuleSHA256 = moduleHash(&ptcruntime.Job{Module: minimal}) })
		if out := p.Run(context.Background(), job); out.Err != nil || string(out.Result) != `{"echo":2}` {
			t.Fatalf("by hash: %s %v", out.Result, out.Err)
		}
	})
	t.Run("a worker that does not hold the module is sent it", func(t *testing.T) {
		// The pool keeps the bytes; a fresh worker has compiled nothing.
		q := newPool(t, Config{Workers: -1})
		q.modules.keep(moduleHash(&ptcruntime.Job{Module: minimal}), minimal)
		job := newWASMJob(t, nil, `3`, func(j *ptcruntime.Job) { j.ModuleSHA256 = moduleHash(&ptcruntime.Job{Module: minimal}) })
		if out := q.Run(context.Background(), job); out.Err != nil || string(out.Result) != `{"echo":3}` {
			t.Fatalf("%s %v", out.Result, out.Err)
		}
		// Neither the pool nor the worker holds this one.
		job = newWASMJob(t, nil, `4`, func(j *ptcruntime.Job) { j.ModuleSHA256 = strings.Repeat("ab", 32) })
		out := q.Run(context.Background(), job)
		if out.Err == nil || out.Err.Kind != fault.KindInternal || !errors.Is(out.Err, wasm.ErrUnknownModule) {
			t.Fatalf("unknown module: %v", out.Err)
		}
	})
	spinner := guest(t, "spinner")
	t.Run("killed at the deadline", func(t *testing.T) {
		before := p.Stats().Killed
		began := time.Now()
		job := newWASMJob(t, spinner, ``, func(j *ptcruntime.Job) { j.Limits.Timeout = 200 * time.Millisecond })
		out := p.Run(context.Background(), job)
		if out.Err == nil || out.Err.Kind != fault.KindTimeout {
			t.Fatalf("got %v, want TIMEOUT", out.Err)
		}
		if p.Stats().Killed == before {
			t.Error("the worker was not killed")
		}
		t.Logf("TIMEOUT after %s: %v", time.Since(began), out.Err)
		if out := p.Run(context.Background(), newWASMJob(t, minimal, `5`, nil)); out.Err != nil {
			t.Fatalf("next execution: %v", out.Err)
		}
	})
	t.Run("CPU limit from the thread's clock", func(t *testing.T) {
		job := newWASMJob(t, spinner, ``, func(j *ptcruntime.Job) {
			j.Limits.CPUTime = 100 * time.Millisecond
			j.Limits.Timeout = 20 * time.Second
		})
		out := p.Run(context.Background(), job)
		if out.Err == nil || out.Err.Kind != fault.KindCPULimit || out.Err.Observed < int64(100*time.Millisecond) {
			t.Fatalf("got %+v, want CPU_LIMIT", out.Err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		out := p.Run(ctx, newWASMJob(t, spinner, ``, nil))
		if out.Err == nil || out.Err.Kind != fault.KindCancelled || out.Err.Message != "the execution was cancelled by the caller" {
			t.Fatalf("got %v, want CANCELLED", out.Err)
		}
	})
	t.Run("memory limit", func(t *testing.T) {
		job := newWASMJob(t, guest(t, "memgrow"), `{"step_kib": 1024}`, func(j *ptcruntime.Job) { j.Limits.MemoryBytes = 32 << 20 })
		out := p.Run(context.Background(), job)
		if out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
			t.Fatalf("got %v, want MEMORY_LIMIT", out.Err)
		}
	})
	t.Run("a JavaScript job that carries module bytes runs its source", func(t *testing.T) {
		for _, q := range []*Pool{p, newPool(t, Config{Mode: ModeInProcess})} {
			job, _ := newJob(t, `return 1`, testLimits())
			job.Language, job.Module = core.LanguageJavaScript, []byte{0, 1, 2}
			if out := q.Run(context.Background(), job); out.Err != nil || string(out.Result) != `1` {
				t.Fatalf("%s %v", out.Result, out.Err)
			}
		}
	})
	t.Run("in-process pool refuses", func(t *testing.T) {
		q := newPool(t, Config{Mode: ModeInProcess})
		if out := q.Run(context.Background(), newWASMJob(t, minimal, `1`, nil)); out.Err == nil || out.Err.Kind != fault.KindInternal {
			t.Fatalf("got %v", out.Err)
		}
	})
}
