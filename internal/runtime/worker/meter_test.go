package worker

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
)

// TestWatchdogPeakWithinLimit: the peak an execution reports is what it is
// charged with. Garbage that takes the heap past the limit before the
// collector runs is not charged (a collection at the end decides), and
// live data past the limit at the end — a result held, the script's data —
// is a MEMORY_LIMIT with the limit and what was observed. Collections are
// off while the execution allocates, so the end's collection is the only
// one.
func TestWatchdogPeakWithinLimit(t *testing.T) {
	const limit = 32 << 20
	cases := []struct {
		name   string
		keep   int // MiB still referenced when the execution ends
		churn  int // MiB allocated and dropped
		breach bool
	}{
		{"garbage past the limit", 0, 48, false},
		{"live data within, garbage past", 16, 32, false},
		{"live data past the limit", 40, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			w := newWatchdog(0, limit, liveHeap(), false, cancel)
			var kept [][]byte
			for i := 0; i < tc.keep; i++ {
				kept = append(kept, make([]byte, 1<<20))
			}
			var sink []byte
			for i := 0; i < tc.churn; i++ {
				sink = make([]byte, 1<<20)
			}
			_ = sink
			_, peak, fe := w.stop()
			runtime.KeepAlive(kept)
			if !tc.breach {
				if fe != nil || peak > limit || peak < int64(tc.keep)<<20*7/8 {
					t.Fatalf("breach %v, peak %d for a limit of %d", fe, peak, limit)
				}
				return
			}
			if fe == nil || fe.Kind != fault.KindMemoryLimit || fe.Limit != limit || fe.Observed <= limit || peak < fe.Observed {
				t.Fatalf("breach %+v, peak %d", fe, peak)
			}
			if ctx.Err() != nil {
				t.Fatal("a breach found at the end cancelled the finished execution")
			}
		})
	}
}

// TestWatchdogLeavesOutWaits: CPU time the thread spent waiting for a tool
// answer (spinning before it blocked, as internal/ipc reports it) is not
// the script's. The thread burns some CPU; the waits reported cover all of
// it and more, so the execution is charged nothing.
func TestWatchdogLeavesOutWaits(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, tc := range []struct {
		name string
		spun bool
	}{
		{"waits reported", true},
		{"no report", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waited time.Duration
			w := newWatchdog(0, 0, 0, false, func(error) {})
			if tc.spun {
				w.leaveOut(func() time.Duration { return waited })
			}
			// Burn CPU on this thread until its clock shows it.
			for clockNow(w.clock)-w.cpu0 <= 0 {
				burn()
			}
			waited = time.Hour
			used := w.used()
			_, _, fe := w.stop()
			if fe != nil {
				t.Fatal(fe)
			}
			if tc.spun != (used == 0) {
				t.Fatalf("charged %s; waits reported %v", used, tc.spun)
			}
		})
	}
}

// burn spends a little CPU.
func burn() {
	x := 1
	for i := range 100000 {
		x = x*31 + i
	}
	sink = x
}

var sink int
