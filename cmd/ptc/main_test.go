package main

import (
	"os"
	"testing"

	"github.com/ptcrun/ptc/runtime/worker"
)

func TestMain(m *testing.M) {
	// `ptc mcp` runs executions in worker processes: this test binary is
	// re-executed as one.
	if code, ok := worker.Main(); ok {
		os.Exit(code)
	}
	code := m.Run()
	if ptcBuild.dir != "" {
		_ = os.RemoveAll(ptcBuild.dir)
	}
	os.Exit(code)
}
