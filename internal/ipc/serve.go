package ipc

import "time"

// serveBackoffMin and serveBackoffMax bound how long Serve leaves the
// connection to a mailbox that reads it before looking again: while a
// Mailbox.Next reads, a frame wakes both it and Serve, and Serve steps
// back instead of competing. Each step back in a row doubles the next (a
// mailbox that was reading at the last look most likely still is: its
// owner exchanges frame after frame, a worker's calls and their answers),
// and a look that finds frames for Serve to read resets it, so a frame
// nobody waits for in a mailbox (a Handler's: a cancellation) waits at
// most serveBackoffMax, and usually serveBackoffMin.
const (
	serveBackoffMin = time.Millisecond
	serveBackoffMax = 8 * time.Millisecond
)

// Serve reads frames until the connection fails or closes, handing each
// to Options.Handler or to the mailbox of its tag, and returns why it
// stopped (ErrClosed after Close, ErrPeerClosed when the peer went away,
// the Handler's error, or a protocol error such as a FrameTooLargeError).
// It runs on the calling goroutine and reads with read system calls; it
// waits parked in the runtime's poller (serveWait), holding no P, where a
// Mailbox.Next blocks in poll. The goroutine is not locked to its thread:
// a Handler that starts a goroutine can let it start on this thread at
// once (runtime.Gosched) instead of waking another one, which a thread
// about to block would otherwise have to do; a locked thread could not
// (BenchmarkRoundTrip, wait=handoff). While a goroutine in Mailbox.Next
// reads the connection, Serve steps back (one wasted wake-up per step
// back: serveBackoffMin, doubling up to serveBackoffMax while mailboxes
// keep reading), so frames reach the waiter directly; while none does,
// Serve reads whatever arrives, so the peer can always write and frames
// for mailboxes wait in memory on this side (a frame for the Handler that
// arrives while Serve steps back waits for the step back to end). At most
// one goroutine may be in Serve.
func (c *Conn) Serve() error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.leave()
	backoff, wait := false, time.Duration(0)
	stepBack := func() {
		backoff = true
		wait = nextServeBackoff(wait)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var res pollResult
		var err error
		if backoff {
			// Parked, not in a system call: the step back holds no P.
			backoff = false
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-c.downCh:
				timer.Stop()
				res.closed = true
			}
		} else {
			res, err = c.sw.wait(c.cfd)
		}
		if err != nil {
			c.fail(err)
			return err
		}
		if res.closed {
			return c.Err()
		}
		if !res.ready {
			continue
		}
		c.mu.Lock()
		took := c.takeRoleLocked()
		c.mu.Unlock()
		if !took {
			stepBack()
			continue
		}
		read, err := c.readAvailable()
		c.releaseRole()
		if err == nil && !read {
			// A mailbox took what woke us: it is reading, step back.
			stepBack()
		} else if read {
			wait = 0
		}
		if err == nil {
			// Answers the Handler queued go out together.
			err = c.Flush()
		}
		if err != nil {
			c.fail(err)
			return c.Err()
		}
	}
}

// nextServeBackoff is the step back that follows one of wait (0: none in
// a row): serveBackoffMin, then twice the last, up to serveBackoffMax.
func nextServeBackoff(wait time.Duration) time.Duration {
	return min(max(2*wait, serveBackoffMin), serveBackoffMax)
}

// readAvailable reads and dispatches what the pipe holds without waiting,
// and reports whether it read anything; the caller holds the reading role.
func (c *Conn) readAvailable() (read bool, err error) {
	for {
		if err := c.dispatchBuffered(); err != nil {
			return read, err
		}
		if err := c.rs.fill(c.rfd); err != nil {
			if err == errAgain {
				return read, nil
			}
			return read, err
		}
		read = true
		if c.rs.short {
			// The pipe is empty now: hand out what was read, then poll.
			return read, c.dispatchBuffered()
		}
	}
}

// dispatchBuffered dispatches the complete frames in the read buffer; the
// caller holds the reading role.
func (c *Conn) dispatchBuffered() error {
	for {
		tag, p, ok, err := c.rs.next(c.opt.MaxFrameBytes)
		if err != nil || !ok {
			return err
		}
		if err := c.dispatch(tag, p); err != nil {
			return err
		}
	}
}
