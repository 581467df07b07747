package admission

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t testing.TB, cfg Config) *Controller {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor blocks until cond holds, woken by every change of c.
func waitFor(t *testing.T, c *Controller, cond func() bool) {
	t.Helper()
	for {
		ch := c.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("condition not reached")
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"zero concurrency", Config{}, "max_concurrent"},
		{"negative queue", Config{MaxConcurrent: 1, MaxQueue: -1}, "max_queue"},
		{"negative wait", Config{MaxConcurrent: 1, MaxWait: -1}, "max_wait"},
		{"valid", Config{MaxConcurrent: 1}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestImmediate(t *testing.T) {
	c := mustNew(t, Config{MaxConcurrent: 2})
	r1, w1, err := c.Acquire(context.Background(), "", 0)
	if err != nil || w1 != 0 {
		t.Fatal(err, w1)
	}
	r2, _, err := c.Acquire(context.Background(), "", 0)
	if err != nil || c.Running() != 2 {
		t.Fatal(err, c.Running())
	}
	r1()
	r1() // a second call is a no-op
	r2()
	if c.Running() != 0 {
		t.Fatalf("running = %d", c.Running())
	}
}

func TestQueueFull(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"no queue", Config{MaxConcurrent: 1, MaxQueue: 0, MaxWait: time.Minute}},
		{"no wait", Config{MaxConcurrent: 1, MaxQueue: 5, MaxWait: 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustNew(t, tc.cfg)
			rel, _, err := c.Acquire(context.Background(), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer rel()
			_, _, err = c.Acquire(context.Background(), "", 0)
			var r *Rejected
			if !errors.As(err, &r) || r.Reason != ReasonQueueFull || r.RetryAfter < minRetry || r.RetryAfter > maxRetry {
				t.Fatalf("err = %#v", err)
			}
			if !strings.Contains(r.Error(), "server is at capacity") || !strings.Contains(r.Error(), "retry after") {
				t.Fatalf("message %q", r.Error())
			}
		})
	}
}

// TestQueuedRunsWhenSlotFrees: a waiter gets the slot the moment it is
// released, first come first served.
func TestQueuedRunsWhenSlotFrees(t *testing.T) {
	c := mustNew(t, Config{MaxConcurrent: 1, MaxQueue: 2, MaxWait: time.Minute})
	rel, _, err := c.Acquire(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 2)
	var wg sync.WaitGroup
	for i := 1; i <= 2; i++ {
		wg.Add(1)
		waitFor(t, c, func() bool { return c.Queued() == i-1 })
		// The waiter goroutine ends when it is granted a slot and releases it.
		go func() {
			defer wg.Done()
			r, waited, err := c.Acquire(context.Background(), "", 0)
			if err != nil || waited <= 0 {
				t.Error(err, waited)
				return
			}
			order <- i
			r()
		}()
	}
	waitFor(t, c, func() bool { return c.Queued() == 2 })
	// A third is refused: the queue is full.
	if _, _, err := c.Acquire(context.Background(), "", 0); err == nil {
		t.Fatal("accepted past the queue")
	}
	rel()
	wg.Wait()
	if a, b := <-order, <-order; a != 1 || b != 2 {
		t.Fatalf("order %d, %d", a, b)
	}
	if c.Running() != 0 || c.Queued() != 0 {
		t.Fatal(c.Running(), c.Queued())
	}
}

func TestWaitTimeout(t *testing.T) {
	c := mustNew(t, Config{MaxConcurrent: 1, MaxQueue: 1, MaxWait: 20 * time.Millisecond})
	rel, _, _ := c.Acquire(context.Background(), "", 0)
	defer rel()
	_, waited, err := c.Acquire(context.Background(), "", 0)
	var r *Rejected
	if !errors.As(err, &r) || r.Reason != ReasonWaitTimeout || waited < 20*time.Millisecond {
		t.Fatalf("err = %v waited %v", err, waited)
	}
	if c.Queued() != 0 {
		t.Fatalf("queued = %d", c.Queued())
	}
}

func TestContextCancelled(t *testing.T) {
	c := mustNew(t, Config{MaxConcurrent: 1, MaxQueue: 1, MaxWait: time.Minute})
	rel, _, _ := c.Acquire(context.Background(), "", 0)
	defer rel()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, _, err := c.Acquire(ctx, "", 0); done <- err }()
	waitFor(t, c, func() bool { return c.Queued() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if c.Queued() != 0 || c.Running() != 1 {
		t.Fatal(c.Queued(), c.Running())
	}
}

// TestTenantQuota: a tenant at its quota waits without blocking another
// tenant queued behind it.
func TestTenantQuota(t *testing.T) {
	c := mustNew(t, Config{MaxConcurrent: 2, MaxQueue: 4, MaxWait: time.Minute})
	relA, _, err := c.Acquire(context.Background(), "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	gotA := make(chan func())
	go func() {
		r, _, err := c.Acquire(context.Background(), "a", 1)
		if err != nil {
			t.Error(err)
			close(gotA)
			return
		}
		gotA <- r
	}()
	waitFor(t, c, func() bool { return c.Queued() == 1 })
	// Tenant b overtakes the waiting a: a free slot is there for b.
	relB, waited, err := c.Acquire(context.Background(), "b", 1)
	if err != nil || waited != 0 {
		t.Fatal(err, waited)
	}
	relB()
	relA()
	r := <-gotA
	if r == nil {
		t.FailNow()
	}
	r()
}

func TestTenantQuotaTimeoutNamesTenant(t *testing.T) {
	c := mustNew(t, Config{MaxConcurrent: 4, MaxQueue: 4, MaxWait: 10 * time.Millisecond})
	rel, _, _ := c.Acquire(context.Background(), "acme", 1)
	defer rel()
	_, _, err := c.Acquire(context.Background(), "acme", 1)
	var r *Rejected
	if !errors.As(err, &r) || !r.TenantQuota || !strings.Contains(r.Error(), "tenant acme") {
		t.Fatalf("err = %v", err)
	}
}

// TestConcurrentChurn runs many acquirers at once (for -race) and checks
// the bound is never exceeded.
func TestConcurrentChurn(t *testing.T) {
	c := mustNew(t, Config{MaxConcurrent: 3, MaxQueue: 100, MaxWait: time.Minute})
	var mu sync.Mutex
	cur, peak := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tenant := []string{"a", "b"}[i%2]
			r, _, err := c.Acquire(context.Background(), tenant, 2)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			cur++
			peak = max(peak, cur)
			mu.Unlock()
			mu.Lock()
			cur--
			mu.Unlock()
			r()
		}()
	}
	wg.Wait()
	if peak > 3 || c.Running() != 0 || c.Queued() != 0 {
		t.Fatalf("peak %d running %d queued %d", peak, c.Running(), c.Queued())
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	c := mustNew(b, Config{MaxConcurrent: 64, MaxQueue: 64, MaxWait: time.Second})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, _, err := c.Acquire(context.Background(), "t", 0)
			if err != nil {
				b.Error(err)
				return
			}
			r()
		}
	})
}
