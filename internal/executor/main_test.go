package executor

import (
	"os"
	"testing"

	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// TestMain doubles as the worker entry point: the executors with worker
// processes in these tests start the test binary itself in worker mode.
func TestMain(m *testing.M) {
	if code, ok := worker.Main(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
