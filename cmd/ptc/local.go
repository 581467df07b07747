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
// this build has, and the isolation of isolation(inProcess).
func newLocalRunner(inProcess bool) (*ptc.Runner, error) {
	return ptc.NewRunner(append(isolation(inProcess), ptc.WithTools(demo.Tools()...))...)
}

// isolation is how `ptc run` and `ptc resume` run a script: in one worker
// process (this binary, re-executed) started for it, or in this process
// with inProcess (not a sandbox).
func isolation(inProcess bool) []ptc.Option {
	if inProcess {
		return nil
	}
	// The pool tells an operator of a worker's death with its stderr (a
	// goroutine dump after a stack overflow); the user of the command has
	// the execution's classified error, which says what happened.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	return []ptc.Option{ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 1})}
}

// newLocalRuntime is what `ptc tools` lists the demo tools with: the
// default configuration with the demo tools, assembled as ptcd's.
func newLocalRuntime(ctx context.Context) (*service.Runtime, error) {
	c := config.Default()
	c.DemoTools = true
	return service.NewRuntime(ctx, c, service.Options{InProcess: true, NoContinuations: true})
}
