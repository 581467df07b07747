package executor

import (
	"context"
	"sync"
	"time"
)

// runCtx is the context of an engine that may be parked: a wall-clock
// budget that stops counting while the execution is paused (an engine
// parked in memory waits idle, and its waiting is paused time, not run
// time). It ends when its parent ends or when the budget runs out while
// running; Err is then the parent's error or context.DeadlineExceeded.
type runCtx struct {
	parent context.Context
	// values, once resumed, is the resuming call's context: its values
	// (the segment's trace span, above all) come first.
	values context.Context

	mu       sync.Mutex
	done     chan struct{}
	err      error
	left     time.Duration // budget left; 0: none
	deadline time.Time     // while running with a budget
	timer    *time.Timer
	timedOut bool
	stop     func() bool
}

// newRunCtx returns a running runCtx with budget (0: none). Its
// goroutine-free watcher ends with parent or with the context itself.
func newRunCtx(parent context.Context, budget time.Duration) *runCtx {
	c := &runCtx{parent: parent, done: make(chan struct{}), left: budget}
	c.stop = context.AfterFunc(parent, func() { c.end(parent.Err(), false) })
	c.mu.Lock()
	c.runLocked()
	c.mu.Unlock()
	return c
}

func (c *runCtx) runLocked() {
	if c.left <= 0 || c.err != nil {
		return
	}
	c.deadline = time.Now().Add(c.left)
	c.timer = time.AfterFunc(c.left, func() { c.end(context.DeadlineExceeded, true) })
}

// pause stops the budget: the time until resume is not counted.
func (c *runCtx) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer == nil || c.err != nil {
		return
	}
	c.timer.Stop()
	c.timer = nil
	c.left = time.Until(c.deadline)
	if c.left <= 0 {
		c.left = time.Nanosecond
	}
	c.deadline = time.Time{}
}

// resume starts the budget again; the values of ctx, the resuming call's,
// come first from now on.
func (c *runCtx) resume(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.values = ctx
	c.runLocked()
}

func (c *runCtx) end(err error, timeout bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err, c.timedOut = err, timeout
	if c.timer != nil {
		c.timer.Stop()
	}
	close(c.done)
}

// release frees the context's watcher; call it when the engine returned.
func (c *runCtx) release() { c.stop() }

// expired reports whether the budget ran out.
func (c *runCtx) expired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timedOut
}

// Deadline returns when the budget runs out while running.
func (c *runCtx) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, !c.deadline.IsZero()
}

// Done is closed when the context ends.
func (c *runCtx) Done() <-chan struct{} { return c.done }

// Err returns why the context ended, nil before.
func (c *runCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the resuming call's value, else the parent's.
func (c *runCtx) Value(key any) any {
	c.mu.Lock()
	values := c.values
	c.mu.Unlock()
	if values != nil {
		if v := values.Value(key); v != nil {
			return v
		}
	}
	return c.parent.Value(key)
}
