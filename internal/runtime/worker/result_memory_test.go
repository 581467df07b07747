package worker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
)

// TestResultMemoryCharged: the memory a result takes while it is built is
// the execution's. A value whose JSON is far larger than its heap — one
// array referenced 1,000 times (a 65 MB text from a few KB of heap), a
// string repeated — either ends OK with a peak within memory_bytes or ends
// MEMORY_LIMIT with its limit and what was observed; never OK with a peak
// above the limit (a 64 MB result used to report 298 MiB against a
// 256 MiB limit). A text past max_output_bytes stops there (OUTPUT_LIMIT).
// In worker mode the worker's resident memory stays within the limit,
// the collector's slack and the result's frame.
func TestResultMemoryCharged(t *testing.T) {
	const ok = fault.KindUnspecified // no error
	const (
		// One array of 1,000 short strings, referenced 1,000 times: 65 MB
		// of JSON (a string's text is copied, not built a value at a
		// time, so the serialisation takes a second, not ten).
		shared64MB = `const a = new Array(1000).fill("x".repeat(62)); return new Array(1000).fill(a)`
		strings58  = `const s = "x".repeat(8 << 20); return new Array(7).fill(s)`
		shared400  = `const a = new Array(1000).fill("x".repeat(62)); return new Array(6200).fill(a)`
	)
	cases := []struct {
		name   string
		src    string
		memory int64
		// want is the outcome worker mode must give: OK, MEMORY_LIMIT or
		// OUTPUT_LIMIT. In-process the heap is shared with the tests, so
		// an OK may become MEMORY_LIMIT there; the contract still holds.
		want fault.Kind
	}{
		{"64 MB from shared references, 256 MiB", shared64MB, 256 << 20, ok},
		{"58 MB from a repeated string, 256 MiB", strings58, 256 << 20, ok},
		{"64 MB from shared references, 48 MiB", shared64MB, 48 << 20, fault.KindMemoryLimit},
		{"58 MB from a repeated string, 48 MiB", strings58, 48 << 20, fault.KindMemoryLimit},
		{"400 MB from shared references, 256 MiB", shared400, 256 << 20, fault.KindOutputLimit},
	}
	for _, mode := range []Mode{ModeWorker, ModeInProcess} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%s", mode, tc.name), func(t *testing.T) {
				p := newPool(t, Config{Mode: mode, Workers: 1, MaxWorkers: 1})
				l := testLimits()
				l.MemoryBytes = tc.memory
				l.MaxOutputBytes = 64 << 20 // MaxUntruncatedBytes, as with the overflow policy truncate
				// The time limits are not what is tested: generous, for a
				// loaded machine.
				l.Timeout, l.CPUTime = 5*time.Minute, 5*time.Minute
				var pid int
				if mode == ModeWorker {
					pid = idlePID(t, p)
				}
				job, _ := newJob(t, tc.src, l)
				out := p.Run(context.Background(), job)
				kind := ok
				if out.Err != nil {
					kind = out.Err.Kind
				}
				switch kind {
				case ok:
					if out.PeakMemoryBytes > tc.memory || out.PeakMemoryBytes <= 0 {
						t.Fatalf("OK with a peak of %d bytes, limit %d", out.PeakMemoryBytes, tc.memory)
					}
				case fault.KindMemoryLimit:
					if out.Err.Limit != tc.memory || out.Err.Observed <= tc.memory || out.Result != nil {
						t.Fatalf("breach %+v", out.Err)
					}
				case fault.KindOutputLimit:
					if out.Err.Limit != l.MaxOutputBytes || out.Err.Observed <= l.MaxOutputBytes || out.PeakMemoryBytes > tc.memory {
						t.Fatalf("breach %+v, peak %d", out.Err, out.PeakMemoryBytes)
					}
				default:
					t.Fatalf("outcome %v", out.Err)
				}
				if mode == ModeInProcess {
					if kind != tc.want && !(tc.want == ok && kind == fault.KindMemoryLimit) {
						t.Fatalf("outcome %v, want %v", out.Err, tc.want)
					}
					return
				}
				if kind != tc.want {
					t.Fatalf("outcome %v, want %v", out.Err, tc.want)
				}
				if kind == fault.KindMemoryLimit || raceEnabled {
					// The worker is retired; the race detector's shadow
					// memory is resident too.
					return
				}
				// The execution's charge, the soft memory limit's slack and,
				// after the execution, the result and its Done frame.
				const slack = 16<<20 + 2*(64<<20) + 64<<20
				if hwm := statusOf(pid, "VmHWM:"); hwm > tc.memory+slack {
					t.Fatalf("the worker's resident memory peaked at %d MiB for a %d MiB limit", hwm>>20, tc.memory>>20)
				}
			})
		}
	}
}

// statusOf reads a "kB" field of /proc/<pid>/status in bytes.
func statusOf(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return statusField(b, key)
}
