package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/service"
	"github.com/ptcrun/ptc/tools/demo"
)

// newLocalRunner is the runner of `ptc run`: demo tools and every engine
// this build has, the script in one worker process (this binary,
// re-executed) started for it, or in this process with inProcess (not a
// sandbox).
func newLocalRunner(inProcess bool) (*ptc.Runner, error) {
	opts := []ptc.Option{ptc.WithTools(demo.Tools()...)}
	if !inProcess {
		opts = append(opts, ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 1}))
		// The pool tells an operator of a worker's death with its stderr
		// (a goroutine dump after a stack overflow); the user of ptc run
		// has the execution's classified error, which says what happened.
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	}
	return ptc.NewRunner(opts...)
}

// newLocalRuntime is what `ptc tools` lists the demo tools with: the
// default configuration with the demo tools, assembled as ptcd's.
func newLocalRuntime(ctx context.Context) (*service.Runtime, error) {
	c := config.Default()
	c.DemoTools = true
	return service.NewRuntime(ctx, c, service.Options{InProcess: true, NoContinuations: true})
}
