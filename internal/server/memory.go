package server

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// Giving memory back after large executions. What ptcd holds for one
// execution is bounded (docs/security.md: the request, its result, its
// logs, the tool results in flight, and — for WebAssembly and in-process
// scripts — the script's own memory), but once the execution is over that
// memory is garbage the Go runtime keeps until its next collection, which
// on a quiet server may be a long time: the process stays at its
// high-water mark. After an execution that moved more than a threshold
// through ptcd, or executions that together moved burstFactor times that,
// the server collects and returns the free memory to the system, at most
// once per releaseEvery, and again a moment after the last such execution
// (so a burst pays about once a second, and its end is always followed by
// a release).

// DefaultReleaseAfter is the weight of an execution (the bytes it moved
// through ptcd) above which ptcd gives memory back afterwards.
const DefaultReleaseAfter = 8 << 20

// burstFactor: executions that together moved burstFactor times the
// threshold since the last release schedule one too.
const burstFactor = 8

// releaseEvery is the delay of a release after a large execution, and the
// shortest time between two releases.
const releaseEvery = time.Second

// WithMemoryRelease sets the execution weight above which the server
// collects and returns memory to the system afterwards (default
// DefaultReleaseAfter; 0 turns it off), and release, when not nil, replaces
// ReleaseMemory (tests count the releases).
func WithMemoryRelease(threshold int64, release func()) Option {
	return func(s *Server) {
		s.mem.threshold = threshold
		if release != nil {
			s.mem.release = release
		}
	}
}

// releaser schedules releases.
type releaser struct {
	threshold int64
	release   func()
	// inProcess: JavaScript and TypeScript run in ptcd's own process, so
	// their heap counts (WebAssembly always does).
	inProcess bool

	mu    sync.Mutex
	timer *time.Timer
	// moved is the weight of the executions since the last release.
	moved int64
	// again: a large execution ended while a release was pending.
	again bool
}

// newReleaser returns the default releaser for ex.
func newReleaser(ex *executor.Executor) releaser {
	pool := ex.Workers()
	return releaser{threshold: DefaultReleaseAfter, release: ReleaseMemory,
		inProcess: pool == nil || pool.Facts().Mode == worker.ModeInProcess}
}

// ReleaseMemory collects twice and returns the free memory to the system:
// the first collection empties the buffer pools (sync.Pool, which gRPC's
// and ptc's buffers use) into their victim caches, the second frees them.
func ReleaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// logEntryWeight is what one log entry takes in ptcd besides its text
// (the worker's frame, the entry, its message and its duration in the
// response): about 220 bytes, measured with 100,000 empty lines. Empty
// lines are almost all overhead, so the text alone does not weigh them.
const logEntryWeight = 256

// weight is what an execution moved through ptcd's memory.
func (r *releaser) weight(req core.Request, res *core.Result) int64 {
	w := int64(len(req.Source)+len(req.Module)+len(req.Input)) +
		res.Stats.ToolResultBytes + res.Stats.OutputBytes + res.Stats.LogBytes + int64(len(res.Logs))*logEntryWeight
	if req.Language == core.LanguageWASM || r.inProcess {
		w += res.Stats.PeakMemoryBytes
	}
	return w
}

// note counts an execution's weight and schedules a release after a large
// one, or once the executions since the last release moved more than
// burstFactor times the threshold together (a burst of requests each just
// under the threshold holds as much as a few large ones). An execution
// that ends while a release is pending schedules one more after it: the
// pending release may run while that execution's memory is still in use.
func (r *releaser) note(req core.Request, res *core.Result) {
	if r.threshold <= 0 {
		return
	}
	w := r.weight(req, res)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.moved += w
	if w <= r.threshold && r.moved <= burstFactor*r.threshold {
		return
	}
	if r.timer != nil {
		r.again = true
		return
	}
	r.timer = time.AfterFunc(releaseEvery, r.fire)
}

// fire runs a scheduled release, and schedules the next one if a large
// execution ended in the meantime.
func (r *releaser) fire() {
	r.mu.Lock()
	r.moved = 0
	r.mu.Unlock()
	r.release()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.again {
		r.again = false
		r.timer = time.AfterFunc(releaseEvery, r.fire)
		return
	}
	r.timer = nil
}
