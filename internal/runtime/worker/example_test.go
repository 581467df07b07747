package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/tools"
)

// ExampleNewPool runs a script that calls a tool on a pool of worker
// processes. (The binary must call worker.Main at the
// top of main; this package's tests do it in TestMain.)
func ExampleNewPool() {
	pool, err := worker.NewPool(worker.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()

	add, _ := tools.Compile(tools.Tool{
		Definition: tools.Definition{Name: "add", Description: "adds a and b",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			var in struct{ A, B float64 }
			if err := json.Unmarshal(c.Arguments, &in); err != nil {
				return nil, err
			}
			return json.Marshal(in.A + in.B)
		},
	})
	l := limits.Defaults()
	l.MemoryBytes = 64 << 20
	job := &runtime.Job{
		ExecutionID: "example",
		Source:      `console.log("adding"); return await tools.add({a: input.x, b: 2})`,
		Input:       json.RawMessage(`{"x": 40}`),
		Limits:      l,
		Tools:       bridge.New(bridge.Config{ExecutionID: "example", Tools: []*tools.Compiled{add}, MaxCalls: 10, MaxConcurrent: 2}),
		Logs:        runtime.NewLogBuffer(time.Now(), l, nil),
	}
	out := pool.Run(context.Background(), job)
	logs, _ := job.Logs.Entries()
	fmt.Println(string(out.Result), out.Err, logs[0].Message)
	// Output: 42 <nil> adding
}

// ExampleNewPool_memoryLimit shows a memory bomb ending as MEMORY_LIMIT.
func ExampleNewPool_memoryLimit() {
	pool, err := worker.NewPool(worker.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	l := limits.Defaults()
	l.MemoryBytes = 64 << 20
	out := pool.Run(context.Background(), &runtime.Job{Source: `let s = "x"; for (;;) s += s;`, Limits: l})
	fmt.Println(out.Err.Kind, out.Err.Limit == l.MemoryBytes)
	// Output: MEMORY_LIMIT true
}

// ExampleCheck prints some of the isolation measures a worker puts in
// force.
func ExampleCheck() {
	f, err := worker.Check(worker.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("rlimit_data", f.RlimitDataBytes > 0)
	fmt.Println("empty_environment", f.EnvironmentSize == 0)
	fmt.Println("no_new_privs", f.NoNewPrivs)
	// Output:
	// rlimit_data true
	// empty_environment true
	// no_new_privs true
}
