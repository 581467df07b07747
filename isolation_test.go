package ptc_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/testenv"
	"github.com/ptcrun/ptc/tools"
)

// TestIsolationLogger: the Logger of Isolation receives the pool's
// report of a worker's death (here a Go stack overflow inside the
// engine), and the execution ends as the script's error.
func TestIsolationLogger(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process")
	}
	var logs testenv.SyncBuffer
	r, err := ptc.NewRunner(ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Execute(context.Background(), ptc.Request{Source: `const o = {}; o[Symbol.toPrimitive] = o; return String(o)`})
	if err != nil {
		t.Fatal(err)
	}
	if ptc.KindOf(res.Error) != ptc.KindScript {
		t.Fatalf("error %v, want SCRIPT_ERROR", res.Error)
	}
	if got := logs.String(); !strings.Contains(got, `level=WARN msg="worker process died"`) {
		t.Fatalf("the logger received %q, want the worker's death", got)
	}
}

// TestIsolationPythonInProcess: with PythonInProcess a Python script runs
// in this process while the only worker is busy with a JavaScript
// execution that waits for a tool.
func TestIsolationPythonInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process and compiles the Python interpreter")
	}
	entered, release := make(chan struct{}), make(chan struct{})
	block := tools.Tool{Definition: tools.Definition{Name: "block"},
		Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return json.RawMessage(`1`), nil
		}}
	r, err := ptc.NewRunner(ptc.WithTools(block),
		ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 1, PythonInProcess: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	js := make(chan error, 1)
	go func() {
		res, err := r.Execute(context.Background(), ptc.Request{Source: `return await tools.block({})`})
		if err == nil && res.Error != nil {
			err = res.Error
		}
		js <- err
	}()
	<-entered
	res, err := r.Execute(context.Background(), ptc.Request{Language: ptc.LanguagePython, Source: `return 6 * 7`})
	succeeded(t, res, err)
	if string(res.Result) != "42" {
		t.Fatalf("result %s", res.Result)
	}
	close(release)
	if err := <-js; err != nil {
		t.Fatal(err)
	}
}
