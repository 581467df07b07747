package main

import (
	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// newLocalRunner is the in-process runner of `ptc run`: demo tools and
// every engine this build has.
func newLocalRunner() (*ptc.Runner, error) {
	return ptc.NewRunner(ptc.WithTools(demo.Tools()...))
}

// newLocalExecutor is the executor `ptc tools` lists the demo tools with.
func newLocalExecutor() (*executor.Executor, error) {
	reg := tools.NewRegistry()
	if err := reg.Register(demo.Tools()...); err != nil {
		return nil, err
	}
	return executor.New(executor.Config{Registry: reg})
}
