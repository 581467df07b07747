package worker

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestRestCollects checks the collection armed after an execution: it
// runs once the worker has stayed idle with garbage past the default
// target's goal, and begin disarms it.
func TestRestCollects(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		c := &child{density: 1}
		// Garbage past the default target's goal, as an execution that
		// held that much leaves it; no collection but the one tested
		// takes it away.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		runtime.GC()
		for range liveHeap()>>20 + 8 {
			garbage = make([]byte, 1<<20)
		}
		garbage = nil
		before := numGC()
		c.rest()
		deadline := time.Now().Add(10 * time.Second)
		for numGC() == before {
			if time.Now().After(deadline) {
				t.Fatal("no collection within 10 s of an idle worker's rest")
			}
			runtime.Gosched()
		}
	})
	t.Run("little garbage", func(t *testing.T) {
		// Automatic collections off, so that only collectIdle could
		// start one.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		runtime.GC()
		before := numGC()
		collectIdle()
		if numGC() != before {
			t.Fatal("collectIdle collected a heap within the default target's goal")
		}
	})
	t.Run("begin disarms", func(t *testing.T) {
		c := &child{density: 1}
		c.rest()
		c.begin()
		c.settle.mu.Lock()
		stopped := !c.settle.idle.Stop()
		c.settle.mu.Unlock()
		if !stopped {
			t.Fatal("the idle collection was still armed after begin")
		}
	})
	t.Run("density", func(t *testing.T) {
		c := &child{density: 2}
		c.rest()
		if c.settle.idle != nil {
			t.Fatal("a worker running several executions at once armed an idle collection")
		}
	})
}

// garbage keeps the test's garbage from being optimised away.
var garbage []byte

// numGC is the number of completed collections.
func numGC() int64 {
	_, _, _, cycles := newHeapSampler().readGoal()
	return cycles
}
