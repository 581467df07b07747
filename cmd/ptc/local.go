package main

import (
	"context"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/service"
	"github.com/ptcrun/ptc/tools/demo"
)

// newLocalRunner is the in-process runner of `ptc run`: demo tools and
// every engine this build has.
func newLocalRunner() (*ptc.Runner, error) {
	return ptc.NewRunner(ptc.WithTools(demo.Tools()...))
}

// newLocalRuntime is what `ptc tools` lists the demo tools with: the
// default configuration with the demo tools, assembled as ptcd's.
func newLocalRuntime(ctx context.Context) (*service.Runtime, error) {
	c := config.Default()
	c.DemoTools = true
	return service.NewRuntime(ctx, c, service.Options{InProcess: true, NoContinuations: true})
}
