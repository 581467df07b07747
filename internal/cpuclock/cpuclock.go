// Package cpuclock reads the CPU clock of one OS thread: the CPU time an
// engine spends running a guest on a goroutine locked to that thread,
// without the time the thread waits (tool calls) or is not scheduled (a
// loaded host). It imports nothing of ptc.
package cpuclock

import (
	"time"

	"golang.org/x/sys/unix"
)

// Clock is the CPU clock of one thread.
type Clock int32

// Thread returns the clock of the calling thread; the caller must have
// locked its goroutine to the thread (runtime.LockOSThread) for the
// readings to mean anything.
func Thread() Clock {
	// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) in Linux.
	return Clock(int32((^uint32(unix.Gettid()))<<3 | 6))
}

// Now returns the CPU time the thread has used; 0 when the clock cannot be
// read.
func (c Clock) Now() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(int32(c), &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
