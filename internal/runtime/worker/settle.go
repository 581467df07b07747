package worker

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
)

// Between executions. An execution's heap must never be charged to the
// next one on the same worker: the watchdog measures the live heap the
// last garbage collection marked, and after an execution that held
// hundreds of MiB that figure still counts them until the next collection.
// So a worker running one execution at a time measures its baseline again
// at the start of each execution, collecting first when the last figure is
// stale; and after a large execution it gives the memory back to the
// system before it starts the next (the supervisor's RSS check then sees
// the worker's real size).

// settler orders a worker's clean-up after an execution before the next
// execution's start.
type settler struct {
	mu sync.Mutex
	// idle is the collection armed by rest, stopped by begin (nil until
	// the first rest).
	idle *time.Timer
}

// idleCollectAfter is how long a worker that runs one execution at a time
// stays idle after an execution before it collects the garbage the
// execution left, if the heap is past what the default GC target would
// allow (collectIdle). Its GC target is raised (executionGCPercent), so
// without it that garbage waits for a collection during a later
// execution; a collection started as each execution ended instead ran
// beside the next one whenever executions came back to back.
const idleCollectAfter = time.Millisecond

// minHeapGoal is the Go runtime's smallest heap goal at the default GC
// target (4 MiB).
const minHeapGoal = 4 << 20

// collectIdle collects when the heap's objects are past the goal the
// default GC target (100) would set: twice the live heap the last
// collection marked, and at least minHeapGoal. A worker whose executions
// leave little garbage (a trivial script's runtime) collects as rarely as
// at the default target; one left tens of MiB (a Python interpreter's)
// collects in the gap after it.
func collectIdle() {
	live, objects := newHeapSampler().read()
	if objects > max(2*live, minHeapGoal) {
		runtime.GC()
	}
}

const (
	// staleHeap is how far the live heap may be above the baseline at the
	// start of an execution before it is collected and measured again.
	staleHeap = 4 << 20
	// releaseAfter is the heap growth of an execution above which the
	// worker returns its memory to the system afterwards.
	releaseAfter = 32 << 20
)

// begin returns the live heap the next execution is measured against.
// With several executions per worker the baseline is the idle heap
// measured at start-up (the others' data is theirs).
func (c *child) begin() int64 {
	if c.density != 1 {
		return c.baseLive
	}
	c.settle.mu.Lock()
	defer c.settle.mu.Unlock()
	if c.settle.idle != nil {
		c.settle.idle.Stop()
	}
	live := liveHeap()
	if live > c.baseLive+staleHeap {
		// The last collection ran while an earlier execution held data.
		runtime.GC()
		live = liveHeap()
	}
	c.baseLive = live
	return live
}

// end writes the execution's Done frame (done) and, after a large
// execution, returns the worker's free memory to the system before the
// next execution may begin.
func (c *child) end(out *ptcruntime.Outcome, done func()) {
	if c.density != 1 || out.PeakMemoryBytes <= releaseAfter {
		done()
		return
	}
	c.settle.mu.Lock()
	defer c.settle.mu.Unlock()
	done()
	debug.FreeOSMemory()
}

// rest arms the collection of an execution's garbage (collectIdle) for
// when the worker has been idle idleCollectAfter since its Done; the next
// execution's begin disarms it. A collection already started when an
// execution begins runs beside it, as one the GC would start anyway.
func (c *child) rest() {
	if c.density != 1 {
		return
	}
	c.settle.mu.Lock()
	defer c.settle.mu.Unlock()
	if c.settle.idle == nil {
		c.settle.idle = time.AfterFunc(idleCollectAfter, collectIdle)
		return
	}
	c.settle.idle.Reset(idleCollectAfter)
}
