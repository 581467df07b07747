package worker

import (
	"context"
	"testing"
	"time"
)

func TestTmpOOM(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	l := testLimits()
	l.Timeout = 20 * time.Second
	l.CPUTime = 20 * time.Second
	srcs := []string{`const p = "x".repeat(2 ** 25); return p.split("").length`, `return "x".repeat(256 << 20).length`}
	for i := 0; i < 12; i++ {
		src := srcs[i%2]
		ll := l
		if i%2 == 1 { ll.MemoryBytes = 1 }
		job, _ := newJob(t, src, ll)
		out := p.Run(context.Background(), job)
		t.Logf("%d: %v cause=%v", i, out.Err, func() error { if out.Err != nil { return out.Err.Cause }; return nil }())
	}
}
