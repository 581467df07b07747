package python

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/pyinterp"
)

// unchecked is an engine compiled with NoLoopChecks, as a worker process
// compiles the interpreter; made once per test binary, when a benchmark
// needs it.
var unchecked struct {
	once sync.Once
	e    *Engine
	err  error
}

// loopSrc computes for a while without calling the host.
const loopSrc = "s = 0\nfor i in range(2_000_000):\n    s += i * i % 7\nreturn s"

// benchLoop runs loopSrc on e and reports the guest's CPU time per run.
func benchLoop(b *testing.B, e *Engine) {
	var cpu int64
	for range b.N {
		j, _ := job(loopSrc, "", limits.Limits{}, testTools(b))
		out := e.Run(context.Background(), j)
		if out.Err != nil {
			b.Fatal(out.Err)
		}
		cpu += int64(out.CPUTime)
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkLoop is a computing script on the interpreter compiled with
// the loop checks a cancelled context needs to stop it (in-process).
func BenchmarkLoop(b *testing.B) { benchLoop(b, engine(b)) }

// BenchmarkLoopNoLoopChecks is BenchmarkLoop on the interpreter compiled
// without them, as in a worker process.
func BenchmarkLoopNoLoopChecks(b *testing.B) {
	unchecked.once.Do(func() {
		mod, err := pyinterp.Load("", "")
		if err != nil {
			unchecked.err = err
			return
		}
		unchecked.e, unchecked.err = New(context.Background(), Config{Module: mod, NoLoopChecks: true,
			CacheDir: filepath.Join(os.TempDir(), "ptc-python-test-cache-noloopchecks")})
	})
	if unchecked.err != nil {
		b.Fatal(unchecked.err)
	}
	benchLoop(b, unchecked.e)
}
