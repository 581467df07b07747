package ipc

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

const (
	pollIn  = unix.POLLIN
	pollOut = unix.POLLOUT
)

// Mailbox receives the frames of one tag. Its owner waits for them in
// Next, which reads the connection itself while no other goroutine does:
// the frame the owner waits for then goes from the system call straight
// to it, on its own thread. Frames of the tag that arrive while the owner
// is not waiting are kept, in order, until it next calls Next.
type Mailbox struct {
	c   *Conn
	tag uint64
	// ready is signalled when a frame was queued for a waiting owner, when
	// the owner may take the reading role, or when the connection failed.
	ready chan struct{}

	// Guarded by c.mu.
	queue   [][]byte
	queued  int  // bytes in queue
	waiting bool // the owner is in c.followers
	busy    bool // a goroutine is in Next
	closed  bool

	// done is the Done channel of the context the reading role's poll is
	// woken for (registered once per context); stop cancels the wake-up.
	done <-chan struct{}
	stop func() bool

	// spun is the CPU time the owner's thread spent spinning in Next.
	spun spinCPU
}

// Mailbox returns the mailbox for frames carrying tag. Frames of the tag
// that arrived earlier went to the Handler.
func (c *Conn) Mailbox(tag uint64) (*Mailbox, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	if c.boxes[tag] != nil {
		return nil, ErrTagInUse
	}
	m := &Mailbox{c: c, tag: tag, ready: make(chan struct{}, 1)}
	c.boxes[tag] = m
	return m, nil
}

// signal wakes the owner (the channel holds at most one signal).
func (m *Mailbox) signal() {
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

// Close removes the mailbox; later frames of its tag go to the Handler.
// A goroutine waiting in Next returns ErrClosed.
func (m *Mailbox) Close() {
	c := m.c
	c.mu.Lock()
	if c.boxes[m.tag] == m {
		delete(c.boxes, m.tag)
	}
	m.closed = true
	m.queue, m.queued = nil, 0
	if m.waiting {
		c.removeFollowerLocked(m)
	}
	m.signal()
	stop := m.stop
	m.stop, m.done = nil, nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Next waits for the next frame of the mailbox's tag and calls fn with its
// payload, which is valid only until fn returns; fn's error is returned.
// fn runs while the caller may hold the connection's reading role, so it
// should only decode. Next returns ctx's error when ctx ends first (a
// frame that arrives later is kept for the next call), and the
// connection's error once it fails. One goroutine at a time may wait on a
// mailbox. Before it waits, Next writes the frames this side queued
// (Queue); a frame already waiting in the mailbox is returned without
// writing them, so that answers queued to a batch of frames taken one by
// one go out together when the batch is done.
func (m *Mailbox) Next(ctx context.Context, fn func(payload []byte) error) error {
	c := m.c
	c.mu.Lock()
	if m.busy {
		c.mu.Unlock()
		return ErrMailboxBusy
	}
	m.busy = true
	defer func() {
		c.mu.Lock()
		m.busy = false
		c.mu.Unlock()
	}()
	for {
		if m.closed {
			c.mu.Unlock()
			return ErrClosed
		}
		if len(m.queue) > 0 {
			p := m.queue[0]
			m.queue[0] = nil
			m.queue = m.queue[1:]
			m.queued -= len(p)
			c.mu.Unlock()
			return fn(p)
		}
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return err
		}
		if err := ctx.Err(); err != nil {
			c.mu.Unlock()
			return err
		}
		if len(c.pending) > 0 && !c.flushing {
			// About to wait: what this side queued goes out first (the
			// answer may depend on it). A frame already here is taken
			// without writing, so answers queued for a batch of frames
			// go out together.
			c.flushing = true
			_ = c.flushLocked()
			c.mu.Lock()
			continue
		}
		if c.takeRoleLocked() {
			c.users++
			m.watchLocked(ctx)
			c.mu.Unlock()
			return m.lead(ctx, fn)
		}
		// Someone else reads: wait to be handed a frame or the role.
		m.waiting = true
		c.followers = append(c.followers, m)
		c.mu.Unlock()
		select {
		case <-m.ready:
			c.mu.Lock()
		case <-ctx.Done():
			c.mu.Lock()
			if m.waiting {
				c.removeFollowerLocked(m)
			} else {
				// A signal was sent: if it handed over the reading role,
				// pass it on.
				select {
				case <-m.ready:
				default:
				}
				if !c.reading && len(c.followers) > 0 {
					c.reading = true
					c.releaseRoleLocked()
				}
			}
			c.mu.Unlock()
			return ctx.Err()
		}
	}
}

// SpinCPU returns the CPU time the threads of the goroutines waiting in
// Next spent retrying the empty pipe before blocking (Options.SpinBudget),
// read from their CPU clocks: a caller that charges its thread's CPU time
// to someone (a script's CPU limit) subtracts it, since it is waiting,
// not work. It is exact for a goroutine locked to its thread. Safe to call
// from any goroutine.
func (m *Mailbox) SpinCPU() time.Duration { return time.Duration(m.spun.total.Load()) }

// watchLocked arranges for the end of ctx to wake the reading role's
// poll, once per context.
func (m *Mailbox) watchLocked(ctx context.Context) {
	done := ctx.Done()
	if done == nil || done == m.done {
		return
	}
	if m.stop != nil {
		m.stop()
	}
	c := m.c
	m.done = done
	m.stop = context.AfterFunc(ctx, func() {
		if c.enter() == nil {
			signalEventfd(c.lfd)
			c.leave()
		}
	})
}

// lead reads the connection as the holder of the reading role until the
// mailbox's frame arrives, ctx ends or the connection fails; frames of
// other tags are dispatched on the way. The caller has taken the role and
// entered the connection.
func (m *Mailbox) lead(ctx context.Context, fn func([]byte) error) error {
	c := m.c
	done := func(err error) error {
		c.mu.Lock()
		c.releaseRoleLocked()
		c.leaveLocked()
		c.mu.Unlock()
		return err
	}
	for {
		for {
			tag, p, ok, err := c.rs.next(c.opt.MaxFrameBytes)
			if err != nil {
				c.fail(err)
				return done(err)
			}
			if !ok {
				break
			}
			if tag == m.tag {
				c.mu.Lock()
				mine := c.boxes[m.tag] == m
				c.mu.Unlock()
				if mine {
					err := fn(p)
					// Frames read with this one go to their owners before
					// the role is given up: no read may bring them up later.
					derr := c.dispatchBuffered()
					if derr == nil {
						derr = c.Flush()
					}
					if derr != nil {
						c.fail(derr)
						if err == nil {
							err = derr
						}
					}
					return done(err)
				}
			}
			if err := c.dispatch(tag, p); err != nil {
				c.fail(err)
				return done(err)
			}
		}
		if err := c.Flush(); err != nil {
			return done(err)
		}
		if err := ctx.Err(); err != nil {
			return done(err)
		}
		if c.rs.short {
			// The pipe was empty: spin first if a frame is expected
			// soon, then block.
			got, err := c.spinRead(ctx, &m.spun)
			if err != nil {
				c.fail(err)
				return done(err)
			}
			if got {
				continue
			}
			res, err := c.poll(c.rfd, pollIn, true, -1)
			if err != nil {
				c.fail(err)
				return done(err)
			}
			if res.woken {
				drainEventfd(c.lfd)
			}
			if res.closed {
				return done(c.Err())
			}
			if !res.ready {
				continue
			}
		}
		if err := c.rs.fill(c.rfd); err != nil && err != errAgain {
			c.fail(err)
			return done(err)
		}
	}
}
