package ipc

import "time"

// serveBackoff is how long Serve leaves the connection to a mailbox that
// reads it before looking again: while a Mailbox.Next reads, a frame
// wakes both it and Serve, and Serve steps back instead of competing.
const serveBackoff = time.Millisecond

// Serve reads frames until the connection fails or closes, handing each
// to Options.Handler or to the mailbox of its tag, and returns why it
// stopped (ErrClosed after Close, ErrPeerClosed when the peer went away,
// the Handler's error, or a protocol error such as a FrameTooLargeError).
// It runs on the calling goroutine and blocks in poll and read system
// calls rather than the netpoller. The goroutine is not locked to its
// thread: a Handler that starts a goroutine can let it start on this
// thread at once (runtime.Gosched) instead of waking another one, which a
// thread about to block in poll would otherwise have to do; a locked
// thread could not (BenchmarkRoundTrip, wait=handoff). While a goroutine
// in Mailbox.Next reads the connection, Serve steps back (at most one
// wasted wake-up per millisecond), so frames reach the waiter directly;
// while none does, Serve reads whatever arrives, so the peer can always
// write and frames for mailboxes wait in memory on this side. At most one
// goroutine may be in Serve.
func (c *Conn) Serve() error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.leave()
	backoff := false
	for {
		var res pollResult
		var err error
		if backoff {
			backoff = false
			res, err = c.poll(-1, 0, false, serveBackoff)
		} else {
			res, err = c.poll(c.rfd, pollIn, false, -1)
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
			backoff = true
			continue
		}
		read, err := c.readAvailable()
		c.releaseRole()
		if err == nil && !read {
			// A mailbox took what woke us: it is reading, step back.
			backoff = true
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
