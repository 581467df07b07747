package ipc

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directMin is the payload size from which Send writes the payload in
// place (writev of header and payload) instead of copying it behind the
// header.
const directMin = 4 << 10

// Send writes one frame. When no other goroutine is writing, the frame is
// written by the caller before Send returns; otherwise it is queued and
// the goroutine writing writes it with its own (one system call for all of
// them). A payload larger than MaxFrameBytes is refused with a
// *FrameTooLargeError and nothing is written. Errors after which the
// connection no longer works (ErrPeerClosed, ErrWriteTimeout, ErrClosed)
// are returned by this and every later call.
func (c *Conn) Send(tag uint64, payload []byte) error {
	if err := c.checkSize(payload); err != nil {
		return err
	}
	c.mu.Lock()
	if c.err == nil && !c.flushing && len(c.pending) == 0 && len(payload) >= directMin {
		c.flushing = true
		c.users++
		c.mu.Unlock()
		err := c.writeFrame(tag, payload)
		c.mu.Lock()
		c.leaveLocked()
		if err != nil {
			c.failLocked(err)
		}
		return c.flushLocked()
	}
	if err := c.queueLocked(tag, payload); err != nil {
		c.mu.Unlock()
		return err
	}
	if c.flushing {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.flushing = true
	return c.flushLocked()
}

// Queue adds a frame to be written by the next Flush (or Send): frames
// queued together go out in one system call. It waits while more than
// MaxQueuedBytes are queued.
func (c *Conn) Queue(tag uint64, payload []byte) error {
	if err := c.checkSize(payload); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queueLocked(tag, payload)
}

// Flush writes the queued frames, or leaves them to the goroutine already
// writing.
func (c *Conn) Flush() error {
	c.mu.Lock()
	if c.flushing || len(c.pending) == 0 {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.flushing = true
	return c.flushLocked()
}

func (c *Conn) checkSize(payload []byte) error {
	if len(payload) > c.opt.MaxFrameBytes {
		return &FrameTooLargeError{Size: int64(len(payload)), Max: int64(c.opt.MaxFrameBytes)}
	}
	return nil
}

func (c *Conn) queueLocked(tag uint64, payload []byte) error {
	for c.err == nil && len(c.pending) > 0 && len(c.pending)+HeaderBytes+len(payload) > c.opt.MaxQueuedBytes {
		if !c.flushing {
			// Nobody writes: write what is queued to make room.
			c.flushing = true
			_ = c.flushLocked()
			c.mu.Lock()
			continue
		}
		c.space.Wait()
	}
	if c.err != nil {
		return c.err
	}
	c.pending = appendHeader(c.pending, tag, len(payload))
	c.pending = append(c.pending, payload...)
	return nil
}

// flushLocked writes pending frames until none are left; the caller set
// c.flushing and holds c.mu, which flushLocked releases.
func (c *Conn) flushLocked() error {
	for len(c.pending) > 0 && c.err == nil {
		buf := c.pending
		c.pending, c.spare = c.spare[:0], nil
		c.users++
		c.space.Broadcast()
		c.mu.Unlock()
		err := c.writeAll(buf)
		c.mu.Lock()
		c.leaveLocked()
		if cap(buf) <= 1<<20 {
			c.spare = buf[:0]
		}
		if err != nil {
			c.failLocked(err)
		}
	}
	c.flushing = false
	err := c.err
	c.space.Broadcast()
	c.mu.Unlock()
	return err
}

// writeFrame writes a header and payload with writev, without copying the
// payload; the caller holds the writing turn.
func (c *Conn) writeFrame(tag uint64, payload []byte) error {
	// The vector must not keep the payload reachable once written: a
	// connection would hold its last large frame for as long as it lives.
	defer func() { c.iov = [2]unix.Iovec{} }()
	hdr := appendHeader(c.hdr[:0], tag, len(payload))
	for len(hdr) > 0 {
		c.iov[0] = unix.Iovec{Base: &hdr[0]}
		c.iov[0].SetLen(len(hdr))
		c.iov[1] = unix.Iovec{Base: &payload[0]}
		c.iov[1].SetLen(len(payload))
		n, err := c.writev(c.iov[:])
		if err != nil {
			return err
		}
		if n < len(hdr) {
			hdr = hdr[n:]
			continue
		}
		payload = payload[n-len(hdr):]
		hdr = nil
	}
	return c.writeAll(payload)
}

// writev writes iov once, waiting for room.
func (c *Conn) writev(iov []unix.Iovec) (int, error) {
	for {
		n, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(c.wfd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		if errno == 0 {
			return int(n), nil
		}
		if err := c.writeError(errno); err != nil {
			return 0, err
		}
	}
}

// writeAll writes b, waiting for room as needed.
func (c *Conn) writeAll(b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(c.wfd, b)
		if err != nil {
			if err := c.writeError(err); err != nil {
				return err
			}
			continue
		}
		b = b[n:]
	}
	return nil
}

// writeError classifies a failed write: nil to retry (interrupted, or the
// pipe had no room and now has), or why the connection failed.
func (c *Conn) writeError(err error) error {
	switch err {
	case unix.EINTR:
		return nil
	case unix.EAGAIN:
		return c.waitWritable()
	case unix.EPIPE:
		return ErrPeerClosed
	}
	return fmt.Errorf("ipc: write: %w", err)
}

// waitWritable waits until the pipe has room, up to the write timeout.
func (c *Conn) waitWritable() error {
	timeout := c.opt.WriteTimeout
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		res, err := c.poll(c.wfd, pollOut, false, timeout)
		if err != nil {
			return err
		}
		if res.closed {
			if err := c.Err(); err != nil {
				return err
			}
		}
		if res.ready {
			return nil
		}
		if timeout > 0 {
			if timeout = time.Until(deadline); timeout <= 0 {
				return ErrWriteTimeout
			}
		}
	}
}
