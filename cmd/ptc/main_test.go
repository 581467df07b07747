package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/internal/testenv"
)

// ptcBin is the ptc binary built by TestMain: the CLI tests run what a
// user runs.
var ptcBin string

func TestMain(m *testing.M) {
	// `ptc mcp` runs executions in worker processes: this test binary is
	// re-executed as one.
	if code, ok := worker.Main(); ok {
		os.Exit(code)
	}
	bin, cleanup, err := testenv.BuildCommand()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ptcBin = bin
	code := testenv.SkipReport(m).Run()
	cleanup()
	os.Exit(code)
}
