package worker

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptcrun/ptc/internal/fault"
)

// threadClock returns the clock id of a thread's CPU clock
// (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) in Linux).
func threadClock(tid int) int32 { return int32((^uint32(tid))<<3 | 6) }

// clockNow reads a CPU clock; 0 when it cannot be read.
func clockNow(id int32) time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(id, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// heapSampler reads the heap metrics the watchdog needs.
type heapSampler struct {
	s [4]metrics.Sample
}

func newHeapSampler() *heapSampler {
	h := &heapSampler{}
	h.s[0].Name = "/gc/heap/live:bytes"
	h.s[1].Name = "/memory/classes/heap/objects:bytes"
	h.s[2].Name = "/gc/heap/goal:bytes"
	h.s[3].Name = "/gc/cycles/total:gc-cycles"
	return h
}

// read returns the live heap marked by the last GC and the bytes held by
// heap objects now (garbage not yet swept included).
func (h *heapSampler) read() (live, objects int64) {
	live, objects, _, _ = h.readGoal()
	return live, objects
}

// readGoal is read with the heap goal of the current GC cycle (heap
// objects at or above it mean a collection is under way: it starts before
// the heap reaches its goal) and the number of completed GC cycles.
func (h *heapSampler) readGoal() (live, objects, goal, cycles int64) {
	metrics.Read(h.s[:])
	return int64(h.s[0].Value.Uint64()), int64(h.s[1].Value.Uint64()), int64(h.s[2].Value.Uint64()), int64(h.s[3].Value.Uint64())
}

// liveHeap returns the live heap marked by the last GC.
func liveHeap() int64 {
	live, _ := newHeapSampler().read()
	return live
}

// Watchdog timing. The check interval shrinks to the CPU time left (one
// thread cannot use more CPU than wall time), is busyInterval while the
// script computes and backs off to maxInterval while it waits. A GC cycle
// triggers a check at once.
const (
	minInterval  = time.Millisecond
	busyInterval = 5 * time.Millisecond
	maxInterval  = 100 * time.Millisecond
	// forcedGCGap bounds how often the watchdog forces a collection to
	// confirm a suspected memory breach.
	forcedGCGap = 20 * time.Millisecond
)

// breach is the cancellation cause the watchdog sets.
type breach struct{ fe *fault.Error }

func (b *breach) Error() string { return b.fe.Error() }

// watchdog enforces the CPU and memory limits of one execution running on
// a locked OS thread. It owns no goroutine: its checks run on the goroutine
// of a time.AfterFunc timer (re-armed after each check until stop) and are
// brought forward by GC notifications, so an execution that ends within
// the first interval costs no goroutine at all.
type watchdog struct {
	clock    int32
	cpu0     time.Duration
	cpuLimit time.Duration
	memLimit int64
	baseLive int64
	baseObj  int64
	// cycles0 is the number of GC cycles completed when the execution
	// started: only a cycle begun after it (cycles0+2 completed) measured
	// the execution's own heap.
	cycles0 int64
	// shared means other executions use the same heap: a memory breach is
	// then charged only to an execution that computed for at least a fifth
	// of the time since the last check (the one allocating), never to one
	// parked on a tool call.
	shared bool
	cancel context.CancelCauseFunc
	// onBreach, when set, is told of a breach as soon as it is detected,
	// with the CPU time and peak heap growth so far.
	onBreach func(fe *fault.Error, cpu time.Duration, peak int64)

	heap   *heapSampler
	stopCh chan struct{}
	// spun, when set, returns the thread's CPU time spent waiting (not
	// the script's); spun0 is its value at the start.
	spun  func() time.Duration
	spun0 time.Duration

	mu        sync.Mutex
	timer     *time.Timer
	checking  bool
	peak      int64
	lastCPU   time.Duration
	lastCheck time.Time
	lastGC    time.Time
	stopped   bool
	breached  *fault.Error
}

// newWatchdog measures the starting point of an execution on the calling
// (locked) thread. baseLive is the live heap that is not the execution's.
func newWatchdog(cpuLimit time.Duration, memLimit, baseLive int64, shared bool, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{
		shared:   shared,
		clock:    threadClock(unix.Gettid()),
		cpuLimit: cpuLimit,
		memLimit: memLimit,
		baseLive: baseLive,
		cancel:   cancel,
		heap:     newHeapSampler(),
		stopCh:   make(chan struct{}),
	}
	w.cpu0 = clockNow(w.clock)
	w.lastCheck = time.Now()
	_, w.baseObj, _, w.cycles0 = w.heap.readGoal()
	return w
}

// leaveOut makes the CPU time spun reports, from now on, not count as
// the script's (nil: nothing is left out).
func (w *watchdog) leaveOut(spun func() time.Duration) {
	if spun != nil {
		w.spun, w.spun0 = spun, spun()
	}
}

// cpuNow returns the CPU time the execution's thread has used so far,
// without what it spent waiting.
func (w *watchdog) cpuNow() time.Duration {
	cpu := clockNow(w.clock) - w.cpu0
	if w.spun != nil {
		cpu -= w.spun() - w.spun0
	}
	return cpu
}

// start arms the first check and the GC notifications.
func (w *watchdog) start() {
	w.mu.Lock()
	w.timer = time.AfterFunc(w.nextLocked(true), w.tick)
	w.mu.Unlock()
	armGC(w.stopCh, w.kick)
}

// stop ends the checks (a check still running can only cancel a context
// nobody uses any more), takes a last measure and returns the CPU time
// used, the peak heap growth and the breach, if any.
//
// The peak is what the execution is charged with, so an execution that
// ends without a breach never reports more than its limit: heap growth,
// garbage included, as long as it stays within the limit; past it, only
// the live heap a collection marked counts (the collector may let
// garbage grow well past the limit before it runs: GOGC 400, the soft
// memory limit 16 MiB above the execution's). When heap objects are past
// the limit as the execution ends, a collection decides: live data past
// the limit — the result the execution built, the script's data — is a
// breach like any other.
func (w *watchdog) stop() (time.Duration, int64, *fault.Error) {
	close(w.stopCh)
	cpu := w.cpuNow()
	_, obj := w.heap.read()
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	breached := w.breached
	w.mu.Unlock()
	if cpu < 0 {
		cpu = 0
	}
	grown := obj - w.baseObj
	if breached == nil && w.memLimit > 0 && grown > w.memLimit {
		runtime.GC()
		live, _ := w.heap.read()
		grown = w.usage(live)
		if grown > w.memLimit {
			breached = w.memoryBreach(grown)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if breached != nil && w.breached == nil {
		w.breached = breached
	}
	if grown > w.peak {
		w.peak = grown
	}
	return cpu, w.peak, w.breached
}

// used returns the CPU time the execution's thread has used so far.
func (w *watchdog) used() time.Duration {
	return max(w.cpuNow(), 0)
}

// memoryBreach is the MEMORY_LIMIT of an execution that held used bytes.
func (w *watchdog) memoryBreach(used int64) *fault.Error {
	return fault.Breach(fault.KindMemoryLimit, w.memLimit, used, "the script held more than its memory limit of %s; keep less data at once (process items in smaller batches, avoid building huge strings or arrays)", byteSize(w.memLimit))
}

// kick brings the next check forward (after a GC cycle).
func (w *watchdog) kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped && !w.checking && w.timer != nil {
		w.timer.Reset(0)
	}
}

// tick runs one check on the timer's goroutine and arms the next.
func (w *watchdog) tick() {
	w.mu.Lock()
	if w.stopped || w.checking {
		w.mu.Unlock()
		return
	}
	w.checking = true
	w.mu.Unlock()
	busy, done := w.check()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checking = false
	if !done && !w.stopped {
		w.timer.Reset(w.nextLocked(busy))
	}
}

// nextLocked returns the time to the next check.
func (w *watchdog) nextLocked(busy bool) time.Duration {
	d := maxInterval
	if busy {
		d = busyInterval
	}
	if w.cpuLimit > 0 {
		if left := w.cpuLimit - w.lastCPU; left < d {
			d = left
		}
	}
	if d < minInterval {
		d = minInterval
	}
	return d
}

// check measures CPU and heap once. It reports whether the script used
// CPU since the last check, and whether the limit was breached.
func (w *watchdog) check() (busy, breached bool) {
	cpu := w.cpuNow()
	live, obj, goal, cycles := w.heap.readGoal()
	now := time.Now()
	w.mu.Lock()
	busy = cpu > w.lastCPU
	// hot: the script computed for at least a fifth of the time since the
	// last check — it is running, not parked on a tool call.
	hot := (cpu-w.lastCPU)*5 >= now.Sub(w.lastCheck)
	w.lastCPU, w.lastCheck = cpu, now
	baseLive := w.baseLive
	// Growth past the limit may be garbage: it counts only once a
	// collection has shown it live (below, or in stop).
	if g := obj - w.baseObj; g > w.peak && (w.memLimit <= 0 || g <= w.memLimit) {
		w.peak = g
	}
	w.mu.Unlock()

	if w.cpuLimit > 0 && cpu > w.cpuLimit {
		fe := fault.Breach(fault.KindCPULimit, w.cpuLimit.Nanoseconds(), cpu.Nanoseconds(), "the script used more than its %s of CPU time", w.cpuLimit)
		return busy, w.trip(fe, cpu)
	}
	if w.memLimit <= 0 || (w.shared && !hot) {
		return busy, false
	}
	used := w.usage(live)
	// fresh: the live figure was marked by a collection that began after
	// the execution did (an earlier one may count the data of the
	// execution before).
	fresh := cycles >= w.cycles0+2
	if used <= w.memLimit && obj-baseLive > w.memLimit && (w.shared || obj < goal) && time.Since(w.lastGC) > forcedGCGap {
		// Heap objects (garbage included) passed the limit: collect to
		// learn whether the live heap did. When the execution runs alone
		// in its worker, not while a collection is under way (the heap
		// past its goal): forcing one would wait for it and then mark the
		// whole heap once more, where the next check after it ends reads
		// the live heap it marked (the Go memory limit, set near the
		// execution's, keeps those collections coming). A shared heap
		// has no such limit: there the check collects at once.
		runtime.GC()
		w.lastGC = time.Now()
		live, _ = w.heap.read()
		used, fresh = w.usage(live), true
	}
	if used > w.memLimit && cycles < w.cycles0+2 && time.Since(w.lastGC) > forcedGCGap {
		// The live figure comes from a collection that began before the
		// execution did: it may count an earlier execution's data, still
		// reachable then (in a shared heap, or its last moments in a
		// worker). Confirm with a collection of the execution's own time.
		runtime.GC()
		w.lastGC = time.Now()
		live, _ = w.heap.read()
		used, fresh = w.usage(live), true
	}
	w.mu.Lock()
	if fresh && used > w.peak {
		w.peak = used
	}
	w.mu.Unlock()
	if used > w.memLimit {
		return busy, w.trip(w.memoryBreach(used), cpu)
	}
	return busy, false
}

// usage returns the heap charged to the execution when the last GC marked
// live bytes. The baseline follows the live heap down: what the last GC
// before the execution marked may have included data that has died since
// (an earlier execution's, in a shared heap), and charging against that
// stale figure would let the script hold that much more than its limit.
// check and stop call it, possibly at once (a check still running when
// the execution ends).
func (w *watchdog) usage(live int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if live < w.baseLive {
		w.baseLive = live
	}
	return live - w.baseLive
}

// trip records the first breach and cancels the execution.
func (w *watchdog) trip(fe *fault.Error, cpu time.Duration) bool {
	w.mu.Lock()
	first := w.breached == nil && !w.stopped
	if first {
		w.breached = fe
	}
	peak := w.peak
	w.mu.Unlock()
	if first {
		w.cancel(&breach{fe: fe})
		if w.onBreach != nil {
			w.onBreach(fe, cpu, peak)
		}
	}
	return true
}

// gcSentinel is an object whose finalizer runs after each garbage
// collection. It holds a pointer so that it is not tiny-allocated
// (finalizers of tiny objects may never run).
type gcSentinel struct {
	_ *int
	_ [24]byte
}

// armGC calls f after the next garbage collection and re-arms itself
// until stop is closed: every GC cycle (which SetMemoryLimit makes frequent
// near the limit) triggers a prompt memory check.
func armGC(stop <-chan struct{}, f func()) {
	s := &gcSentinel{}
	runtime.SetFinalizer(s, func(*gcSentinel) {
		select {
		case <-stop:
			return
		default:
		}
		f()
		armGC(stop, f)
	})
}
