package worker

import (
	"runtime"
	"testing"
	"time"
)

// TestRestCollects checks the collection armed after an execution: it
// runs once the worker has stayed idle, and begin disarms it.
func TestRestCollects(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		c := &child{density: 1}
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

func numGC() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}
