package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/limits"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
)

// TestMain doubles as the worker entry point: the pools in these tests
// start the test binary itself in worker mode.
func TestMain(m *testing.M) {
	if os.Getenv(fatalOnUSR1) != "" {
		crashOnUSR1()
	}
	if code, ok := Main(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

// fatalOnUSR1 names the environment variable that makes a test worker die
// of a Go fatal error ("fatal error: sync: unlock of unlocked mutex") when it
// receives SIGUSR1: a crash of the Go runtime itself, as a worker could
// meet one, delivered at a moment the test chooses.
const fatalOnUSR1 = "PTC_TEST_WORKER_FATAL_ON_USR1"

// crashOnUSR1 starts the goroutine that waits for SIGUSR1 and then throws
// the Go runtime's fatal error; it lives as long as the test worker.
func crashOnUSR1() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		<-ch
		var mu sync.Mutex
		mu.Unlock() //nolint:staticcheck // the fatal error is the point
	}()
}

// testLimits are small limits for tests.
func testLimits() limits.Limits {
	l := limits.Defaults()
	l.Timeout = 10 * time.Second
	l.CPUTime = 5 * time.Second
	l.MemoryBytes = 64 << 20
	return l
}

// testTools are the tools the test scripts call.
func testTools(t testing.TB, extra ...tools.Tool) []*tools.Compiled {
	t.Helper()
	defs := []tools.Tool{
		{Definition: tools.Definition{Name: "echo", Description: "returns its arguments",
			InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }},
		{Definition: tools.Definition{Name: "math.add", Description: "adds a and b",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
				var in struct{ A, B float64 }
				if err := json.Unmarshal(c.Arguments, &in); err != nil {
					return nil, err
				}
				return json.Marshal(map[string]float64{"sum": in.A + in.B})
			}},
		{Definition: tools.Definition{Name: "fail", Description: "always fails",
			InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
				return nil, tools.Errorf("not_found", "no such record")
			}},
		{Definition: tools.Definition{Name: "bad", Description: "returns output that breaks its schema",
			InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"string"}`)},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`42`), nil }},
	}
	defs = append(defs, extra...)
	var out []*tools.Compiled
	for _, d := range defs {
		c, err := tools.Compile(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// newJob returns a job with a fresh dispatcher and log buffer.
func newJob(t testing.TB, src string, l limits.Limits, extra ...tools.Tool) (*ptcruntime.Job, *bridge.Dispatcher) {
	t.Helper()
	d := bridge.New(bridge.Config{ExecutionID: "exec-1", Tools: testTools(t, extra...),
		MaxCalls: l.MaxToolCalls, MaxConcurrent: l.MaxConcurrentToolCalls, KeepResults: true})
	job := &ptcruntime.Job{ExecutionID: "exec-1", Source: src, Input: json.RawMessage(`{"n":3}`), Limits: l, Tools: d,
		Logs: ptcruntime.NewLogBuffer(time.Now(), l, nil)}
	return job, d
}

// newPool returns a pool closed at the end of the test.
func newPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// blockingTool returns a tool "block" that signals entered (if not nil)
// and waits until release is closed or its context ends.
func blockingTool(entered chan<- struct{}, release ...<-chan struct{}) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: "block", Description: "waits until released",
		InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
			if entered != nil {
				entered <- struct{}{}
			}
			var rel <-chan struct{}
			if len(release) > 0 {
				rel = release[0]
			}
			select {
			case <-rel:
				return json.RawMessage(`{"released":true}`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
}

// ptcJob builds a bare job (no dispatcher, no logs).
type ptcJob struct {
	Source string
	Module []byte
	Limits limits.Limits
}

func (j ptcJob) job() *ptcruntime.Job {
	return &ptcruntime.Job{ExecutionID: "bare", Source: j.Source, Module: j.Module, Limits: j.Limits}
}

// busyPID returns the pid of the worker running an execution.
func busyPID(t *testing.T, p *Pool) int {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.procs {
		if w.active > 0 {
			return w.pid
		}
	}
	t.Fatal("no busy worker")
	return 0
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
