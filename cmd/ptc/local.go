package main

import (
	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools/demo"
)

// newLocalRunner is the in-process runner of `ptc run`: demo tools and
// every engine this build has.
func newLocalRunner() (*ptc.Runner, error) {
	return ptc.NewRunner(ptc.WithTools(demo.Tools()...))
}
