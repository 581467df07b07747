package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
)

// guestDir holds the example guests built once per test binary run.
var guests struct {
	once sync.Once
	dir  string
	err  error
}

var guestTmp string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ptc-wasm-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guestTmp = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// guestNames are the example guests under examples/wasm.
var guestNames = []string{"expenses", "minimal", "spinner", "memgrow", "outflood", "callflood", "batch", "loop"}

// guest returns the bytes of examples/wasm/<name>, building all example
// guests with GOOS=wasip1 the first time.
func guest(tb testing.TB, name string) []byte {
	tb.Helper()
	guests.once.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", "..", ".."))
		if err != nil {
			guests.err = err
			return
		}
		args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", guestTmp + string(filepath.Separator)}
		for _, n := range guestNames {
			args = append(args, "./examples/wasm/"+n)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			guests.err = fmt.Errorf("build example guests: %v\n%s", err, out)
		}
		guests.dir = guestTmp
	})
	if guests.err != nil {
		tb.Fatal(guests.err)
	}
	b, err := os.ReadFile(filepath.Join(guests.dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func newEngine(tb testing.TB, cfgs ...Config) *Engine {
	tb.Helper()
	var cfg Config
	if len(cfgs) > 0 {
		cfg = cfgs[0]
	}
	// A compilation cache directory shared by the tests' engines keeps
	// each Go guest to one cold compilation per test binary run.
	if cfg.CacheDir == "" {
		cfg.CacheDir = filepath.Join(guestTmp, "cache")
	}
	// Compiling a Go guest takes tens of seconds under the race detector
	// on a loaded host: the compile timeout is not what these tests check
	// (TestCompileTimeout does).
	if cfg.Bounds.CompileTimeout == 0 {
		cfg.Bounds.CompileTimeout = 10 * time.Minute
	}
	e, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// testTools are tools for the guests: echo returns its arguments, fail
// returns a tool error, and barrier (when set) blocks until n calls are in
// flight at once.
func testTools(tb testing.TB, extra ...tools.Tool) []*tools.Compiled {
	tb.Helper()
	ts := []tools.Tool{
		{Definition: tools.Definition{Name: "echo"}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			return c.Arguments, nil
		}},
		{Definition: tools.Definition{Name: "fail"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			return nil, tools.Errorf("not_found", "no such record")
		}},
		{Definition: tools.Definition{Name: "typed", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }},
	}
	ts = append(ts, extra...)
	out := make([]*tools.Compiled, len(ts))
	for i, t := range ts {
		c, err := tools.Compile(t)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = c
	}
	return out
}

// barrierTool returns a tool that blocks every call until n calls are in
// flight together (or the call's context ends), proving concurrency without
// timing.
func barrierTool(n int) tools.Tool {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	return tools.Tool{Definition: tools.Definition{Name: "barrier"}, Handler: func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return json.RawMessage(fmt.Sprintf(`{"seq":%d}`, c.Seq)), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

// job returns a job over module with the given tools and limits (zero
// fields take the defaults).
func job(module []byte, input string, lim limits.Limits, ts []*tools.Compiled) (*runtime.Job, *bridge.Dispatcher) {
	lim = limits.Policy{Defaults: limits.Defaults()}.Resolve(lim, limits.Limits{})
	d := bridge.New(bridge.Config{ExecutionID: "x1", Tools: ts, MaxCalls: lim.MaxToolCalls, MaxConcurrent: lim.MaxConcurrentToolCalls})
	return &runtime.Job{
		ExecutionID: "x1",
		Module:      module,
		Input:       json.RawMessage(input),
		Limits:      lim,
		Tools:       d,
		Logs:        runtime.NewLogBuffer(time.Now(), lim, nil),
	}, d
}
