package worker

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context of an execution's tool calls in the supervisor.
// It ends when the worker reports the execution done — as a deadline
// (context.DeadlineExceeded) when the execution timed out, so that the
// bridge classifies interrupted calls exactly as in-process — when the
// caller's context ends (ended by Pool.wait only after the Cancel frame is
// written, so the worker learns of the cancel before any call fails
// because of it), or at the backstop deadline.
type callCtx struct {
	parent   context.Context
	deadline time.Time
	done     chan struct{}
	timer    *time.Timer

	mu  sync.Mutex
	err error
}

// newCallCtx returns a callCtx whose nominal deadline is timeout from now
// and whose backstop ends it at timeout+grace; timeout 0 means none.
func newCallCtx(parent context.Context, timeout, grace time.Duration) *callCtx {
	c := &callCtx{parent: parent, done: make(chan struct{})}
	if timeout > 0 {
		c.deadline = time.Now().Add(timeout)
	}
	// The timer's callback takes mu, which is held until it is stored.
	c.mu.Lock()
	defer c.mu.Unlock()
	if timeout > 0 {
		c.timer = time.AfterFunc(timeout+grace, func() { c.end(context.DeadlineExceeded) })
	}
	return c
}

// Deadline returns the execution's nominal deadline.
func (c *callCtx) Deadline() (time.Time, bool) {
	if c.deadline.IsZero() {
		return c.parent.Deadline()
	}
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done is closed when the context ends.
func (c *callCtx) Done() <-chan struct{} { return c.done }

// Err returns why the context ended, nil before.
func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the parent's value for key.
func (c *callCtx) Value(key any) any { return c.parent.Value(key) }

// end ends the context with err (the first call wins).
func (c *callCtx) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	timer := c.timer
	c.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
}
