// Package admission decides whether an execution runs now, waits in a
// bounded queue, or is refused: a server-wide cap on concurrent
// executions, a per-tenant quota, a maximum queue depth and a maximum wait.
//
// Waiters are served first come, first served, except that a waiter whose
// tenant is at its quota never blocks waiters of other tenants behind it.
//
// Package admission knows nothing of gRPC; internal/server turns a
// *Rejected into RESOURCE_EXHAUSTED with a retry hint.
package admission

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultMaxConcurrent = 64
	DefaultMaxQueue      = 256
	DefaultMaxWait       = 10 * time.Second
)

// Retry hint bounds.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 30 * time.Second
)

// Config bounds admission.
type Config struct {
	// MaxConcurrent is the number of executions that run at once across
	// all tenants; it must be positive.
	MaxConcurrent int
	// MaxQueue is how many requests may wait for a slot; 0 means none
	// wait (a request that cannot run at once is refused).
	MaxQueue int
	// MaxWait bounds one request's wait; 0 means none wait.
	MaxWait time.Duration
}

// Validate reports a setting out of range.
func (c Config) Validate() error {
	switch {
	case c.MaxConcurrent <= 0:
		return errors.New("admission: max_concurrent must be positive")
	case c.MaxQueue < 0:
		return errors.New("admission: max_queue is negative")
	case c.MaxWait < 0:
		return errors.New("admission: max_wait is negative")
	}
	return nil
}

// Reasons of a Rejected.
const (
	ReasonQueueFull   = "queue_full"
	ReasonWaitTimeout = "wait_timeout"
)

// Rejected is a request refused by admission control.
type Rejected struct {
	// Reason is ReasonQueueFull or ReasonWaitTimeout.
	Reason string
	// Tenant is the tenant whose request was refused ("" when none).
	Tenant string
	// TenantQuota is set when the tenant's own quota held the request back.
	TenantQuota bool
	// RetryAfter is a hint of when a slot may be free.
	RetryAfter time.Duration
}

// Error says why the request was refused and when to retry.
func (r *Rejected) Error() string {
	who := "the server is"
	if r.TenantQuota {
		who = "tenant " + r.Tenant + " is"
	}
	switch r.Reason {
	case ReasonQueueFull:
		return fmt.Sprintf("%s at capacity and the wait queue is full: retry after %s", who, r.RetryAfter.Round(time.Millisecond))
	default:
		return fmt.Sprintf("%s at capacity and no slot freed up in time: retry after %s", who, r.RetryAfter.Round(time.Millisecond))
	}
}

// waiter is one queued request; granted is closed when it gets a slot.
type waiter struct {
	tenant  string
	quota   int
	granted chan struct{}
	done    bool // granted (under Controller.mu)
}

// Controller admits executions. Create it with New; it is safe for
// concurrent use.
type Controller struct {
	cfg Config

	mu       sync.Mutex
	running  int
	byTenant map[string]int
	queue    *list.List // of *waiter
	// avgHold is an exponentially weighted average of how long a slot is
	// held, for the retry hint.
	avgHold time.Duration
	// changed is closed and replaced on every change of running or queued.
	changed chan struct{}
}

// New returns a Controller; cfg must be valid (see Config.Validate).
func New(cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Controller{cfg: cfg, byTenant: map[string]int{}, queue: list.New(), changed: make(chan struct{})}, nil
}

// Config returns the controller's configuration.
func (c *Controller) Config() Config { return c.cfg }

// Running returns the executions holding a slot.
func (c *Controller) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}

// Queued returns the requests waiting for a slot.
func (c *Controller) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queue.Len()
}

// Changed returns a channel that is closed at the next change of Running
// or Queued, for observers that must not poll.
func (c *Controller) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// notifyLocked wakes the observers of Changed (c.mu held).
func (c *Controller) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Acquire waits for a slot for one execution of tenant, whose quota
// (0 = none) bounds its executions at once. It returns a release func that
// must be called exactly once when the execution ends, and the time spent
// waiting. It fails with *Rejected when the queue is full or the wait
// exceeds MaxWait, and with ctx's error when ctx ends first.
func (c *Controller) Acquire(ctx context.Context, tenant string, quota int) (release func(), waited time.Duration, err error) {
	start := time.Now()
	c.mu.Lock()
	// No queued waiter fits (grantLocked runs on every release and every
	// departure), so a request that fits overtakes nobody who could run.
	if c.fits(tenant, quota) {
		c.take(tenant)
		c.mu.Unlock()
		return c.releaser(tenant, start), 0, nil
	}
	tenantFull := quota > 0 && c.byTenant[tenant] >= quota
	if c.queue.Len() >= c.cfg.MaxQueue || c.cfg.MaxWait <= 0 {
		r := &Rejected{Reason: ReasonQueueFull, Tenant: tenant, TenantQuota: tenantFull && c.running < c.cfg.MaxConcurrent, RetryAfter: c.retryLocked()}
		c.mu.Unlock()
		return nil, 0, r
	}
	w := &waiter{tenant: tenant, quota: quota, granted: make(chan struct{})}
	el := c.queue.PushBack(w)
	c.notifyLocked()
	c.mu.Unlock()

	t := time.NewTimer(c.cfg.MaxWait)
	defer t.Stop()
	var cause error
	select {
	case <-w.granted:
		return c.releaser(tenant, time.Now()), time.Since(start), nil
	case <-t.C:
		cause = &Rejected{Reason: ReasonWaitTimeout, Tenant: tenant}
	case <-ctx.Done():
		cause = ctx.Err()
	}
	c.mu.Lock()
	if w.done {
		// Granted while timing out: keep the slot rather than leak it.
		c.mu.Unlock()
		return c.releaser(tenant, time.Now()), time.Since(start), nil
	}
	c.queue.Remove(el)
	c.notifyLocked()
	var r *Rejected
	if errors.As(cause, &r) {
		r.TenantQuota = quota > 0 && c.byTenant[tenant] >= quota && c.running < c.cfg.MaxConcurrent
		r.RetryAfter = c.retryLocked()
	}
	// Leaving may unblock waiters that queued behind this one.
	c.grantLocked()
	c.mu.Unlock()
	return nil, time.Since(start), cause
}

// fits reports whether tenant may take a slot now (c.mu held).
func (c *Controller) fits(tenant string, quota int) bool {
	return c.running < c.cfg.MaxConcurrent && (quota <= 0 || c.byTenant[tenant] < quota)
}

func (c *Controller) take(tenant string) {
	c.running++
	c.byTenant[tenant]++
	c.notifyLocked()
}

// releaser returns the func that gives the slot back once.
func (c *Controller) releaser(tenant string, since time.Time) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			held := time.Since(since)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.running--
			if c.byTenant[tenant]--; c.byTenant[tenant] <= 0 {
				delete(c.byTenant, tenant)
			}
			c.notifyLocked()
			if c.avgHold == 0 {
				c.avgHold = held
			} else {
				c.avgHold += (held - c.avgHold) / 8
			}
			c.grantLocked()
		})
	}
}

// grantLocked hands free slots to the waiters that fit, oldest first
// (c.mu held).
func (c *Controller) grantLocked() {
	for e := c.queue.Front(); e != nil && c.running < c.cfg.MaxConcurrent; {
		next := e.Next()
		w := e.Value.(*waiter)
		if c.fits(w.tenant, w.quota) {
			c.take(w.tenant)
			w.done = true
			c.queue.Remove(e)
			close(w.granted)
		}
		e = next
	}
}

// retryLocked estimates when a slot may free up: the average hold time
// scaled by how many are ahead per slot (c.mu held).
func (c *Controller) retryLocked() time.Duration {
	hold := c.avgHold
	if hold <= 0 {
		hold = time.Second
	}
	d := hold * time.Duration(c.queue.Len()+1) / time.Duration(c.cfg.MaxConcurrent)
	return min(max(d, minRetry), maxRetry)
}
