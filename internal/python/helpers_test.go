package python

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/pyinterp"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
)

// shared is the engine every test uses: the interpreter compiles once per
// test binary (and is loaded from a cache directory kept between runs).
var shared struct {
	once sync.Once
	e    *Engine
	err  error
}

func engine(tb testing.TB) *Engine {
	tb.Helper()
	shared.once.Do(func() {
		mod, err := pyinterp.Load("", "")
		if err != nil {
			shared.err = err
			return
		}
		shared.e, shared.err = New(context.Background(), Config{Module: mod, CacheDir: filepath.Join(os.TempDir(), "ptc-python-test-cache"), Warm: 2})
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.e
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		_ = shared.e.Close(context.Background())
	}
	os.Exit(code)
}

// testTools are tools for the scripts: echo returns its arguments, fail
// returns a tool error, typed checks its arguments' schema.
func testTools(tb testing.TB, extra ...tools.Tool) []*tools.Compiled {
	tb.Helper()
	ts := []tools.Tool{
		{Definition: tools.Definition{Name: "echo", Description: "Echo the arguments back."}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			return c.Arguments, nil
		}},
		{Definition: tools.Definition{Name: "fail", Description: "Always fails."}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			return nil, tools.Errorf("not_found", "no such record")
		}},
		{Definition: tools.Definition{Name: "shop.price", Description: "The price of an item."}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"price": 12.5}`), nil
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

// barrierTool blocks every call until n calls are in flight together (or
// the call's context ends): concurrency proven without timing.
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

// job returns a Python job with the given tools and limits (zero fields
// take the defaults).
func job(src, input string, lim limits.Limits, ts []*tools.Compiled) (*runtime.Job, *bridge.Dispatcher) {
	lim = limits.Policy{Defaults: limits.Defaults()}.Resolve(lim, limits.Limits{})
	d := bridge.New(bridge.Config{ExecutionID: "x1", Tools: ts, MaxCalls: lim.MaxToolCalls, MaxConcurrent: lim.MaxConcurrentToolCalls})
	return &runtime.Job{
		ExecutionID: "x1",
		Language:    core.LanguagePython,
		Source:      src,
		Input:       json.RawMessage(input),
		Limits:      lim,
		Tools:       d,
		Logs:        runtime.NewLogBuffer(time.Now(), lim, nil),
	}, d
}

// run runs src with the test tools and returns its outcome and logs.
func run(tb testing.TB, src, input string, lim limits.Limits, extra ...tools.Tool) (*runtime.Outcome, []core.LogEntry) {
	tb.Helper()
	return runVia(tb, false, src, input, lim, extra...)
}

// callers are the two ways calls reach the engine: Invocations run on
// goroutines of the session's (the Dispatcher in-process), and answers
// the guest's goroutine awaits itself (a worker's call proxy).
var callers = []struct {
	name    string
	awaited bool
}{{"invocations", false}, {"awaited", true}}

// runVia is run; with awaited, the job's Caller is a bridge.Awaiter.
func runVia(tb testing.TB, awaited bool, src, input string, lim limits.Limits, extra ...tools.Tool) (*runtime.Outcome, []core.LogEntry) {
	tb.Helper()
	j, d := job(src, input, lim, testTools(tb, extra...))
	if awaited {
		j.Tools = &answering{Dispatcher: d, answers: make(chan answered, 1024)}
	}
	e := engine(tb)
	// The run takes an interpreter started ahead of it (unless its memory
	// limit is below what one holds): the path of a request the pool keeps
	// up with. TestFreshAndWarmAgree covers interpreters started for a job.
	waitWarm(tb, e, 1)
	out := e.Run(context.Background(), j)
	logs, _ := j.Logs.Entries()
	return out, logs
}

// waitWarm waits until e's pool holds n interpreters started ahead of
// requests.
func waitWarm(tb testing.TB, e *Engine, n int) {
	tb.Helper()
	if e.pool == nil {
		tb.Fatal("the engine keeps no interpreters started")
	}
	for e.pool.waiting() < n {
		<-e.pool.added
	}
}

// answering is a Caller that answers its calls itself (bridge.Awaiter),
// over a Dispatcher, as a worker's call proxy does: each begun call runs
// on a goroutine of its own and its answer queues for Await in the order
// the calls end.
type answering struct {
	*bridge.Dispatcher
	mu      sync.Mutex
	begun   uint32
	answers chan answered
}

type answered struct {
	ticket uint32
	out    json.RawMessage
	err    error
}

func (a *answering) Begin(ctx context.Context, name string, args json.RawMessage) uint32 {
	a.mu.Lock()
	a.begun++
	t := a.begun
	a.mu.Unlock()
	inv := a.Dispatcher.Start(ctx, name, args)
	go func() {
		out, err := inv()
		a.answers <- answered{t, out, err}
	}()
	return t
}

func (a *answering) Await(ctx context.Context) (uint32, json.RawMessage, error) {
	select {
	case x := <-a.answers:
		return x.ticket, x.out, x.err
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
}

// Start must not be used with an Awaiter.
func (a *answering) Start(context.Context, string, json.RawMessage) bridge.Invocation {
	panic("the engine started a call without Begin")
}
