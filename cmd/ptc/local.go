package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/service"
	"github.com/ptcrun/ptc/tools/demo"
)

// newLocalRunner is the runner of `ptc run`: demo tools and every engine
// this build has, where l says.
func newLocalRunner(l local) (*ptc.Runner, error) {
	return ptc.NewRunner(append(l.options(), ptc.WithTools(demo.Tools()...))...)
}

// local is how `ptc run` and `ptc resume` run a script on this machine:
// in one worker process (this binary, re-executed) started for it, or in
// this process with inProcess (not a sandbox).
type local struct {
	inProcess bool
	// stderr is the command's: the pool's errors go there.
	stderr io.Writer
}

// options are the Runner options of l. In a worker process JavaScript,
// TypeScript and WebAssembly run in the worker; Python runs in this
// process, in CPython inside wazero under its limits, as ptcd's
// python.in_supervisor does: a worker, locked off the filesystem, cannot
// read the interpreter's compiled code from the user's cache and would
// compile it (about 7 s) on every run. The pool's warnings (a worker's
// death, with the goroutine dump it wrote) are left out: the execution's
// classified error says what happened.
func (l local) options() []ptc.Option {
	if l.inProcess {
		return nil
	}
	logger := slog.New(slog.NewTextHandler(l.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return []ptc.Option{ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 1,
		PythonInProcess: true, Logger: logger})}
}

// newLocalRuntime is what `ptc tools` lists the demo tools with: the
// default configuration with the demo tools, assembled as ptcd's.
func newLocalRuntime(ctx context.Context) (*service.Runtime, error) {
	c := config.Default()
	c.DemoTools = true
	return service.NewRuntime(ctx, c, service.Options{InProcess: true, NoContinuations: true})
}
