package ipc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// readState is the read side of a connection. It belongs to the goroutine
// holding the reading role, and passes with the role (under Conn.mu).
type readState struct {
	buf  []byte // the read buffer
	r, w int    // buf[r:w] is read but not yet consumed
	// short is true when the last read did not fill the buffer: the pipe
	// was empty, so the next read would most likely find nothing and the
	// reader polls first.
	short bool
	// spin decides whether a wait spins before it polls.
	spin spinState

	// A frame larger than buf is read into a buffer of its own: big holds
	// the bytes received so far, bigN its size and bigTag its tag.
	inBig  bool
	big    []byte
	bigN   int
	bigTag uint64
}

// next returns the next complete frame in the buffer, ok false when more
// bytes are needed. The payload stays valid until the next call of next or
// fill. A header announcing more than maxFrame bytes is an error.
func (s *readState) next(maxFrame int) (tag uint64, payload []byte, ok bool, err error) {
	if s.inBig {
		if len(s.big) < s.bigN {
			return 0, nil, false, nil
		}
		s.inBig = false
		p := s.big
		s.big = nil
		return s.bigTag, p, true, nil
	}
	if s.w-s.r < HeaderBytes {
		s.compact(HeaderBytes)
		return 0, nil, false, nil
	}
	n, tag := parseHeader(s.buf[s.r:])
	if n > int64(maxFrame) {
		return 0, nil, false, &FrameTooLargeError{Size: n, Max: int64(maxFrame)}
	}
	size := HeaderBytes + int(n)
	if size <= s.w-s.r {
		p := s.buf[s.r+HeaderBytes : s.r+size : s.r+size]
		s.r += size
		return tag, p, true, nil
	}
	if size > len(s.buf) {
		// Start a frame of its own. Its buffer grows as bytes arrive, so
		// a peer announcing a large frame does not make this side
		// allocate what it never sends.
		have := s.buf[s.r+HeaderBytes : s.w]
		s.inBig, s.bigN, s.bigTag = true, int(n), tag
		s.big = make([]byte, len(have), min(int(n), max(2*len(have), 64<<10)))
		copy(s.big, have)
		s.r, s.w = 0, 0
		if len(s.big) == s.bigN {
			return s.next(maxFrame)
		}
		return 0, nil, false, nil
	}
	s.compact(size)
	return 0, nil, false, nil
}

// compact moves unconsumed bytes to the front of the buffer when fewer
// than need bytes fit after them.
func (s *readState) compact(need int) {
	if s.r == s.w {
		s.r, s.w = 0, 0
		return
	}
	if s.r > 0 && len(s.buf)-s.r < need {
		s.w = copy(s.buf, s.buf[s.r:s.w])
		s.r = 0
	}
}

// errAgain means a non-blocking read found the pipe empty.
var errAgain = unix.EAGAIN

// fill reads once from fd without blocking into the free part of the
// buffer (or of the large frame in progress). It returns errAgain when
// nothing was there and ErrPeerClosed at the end of the stream.
func (s *readState) fill(fd int) error {
	var dst []byte
	if s.inBig {
		if len(s.big) == cap(s.big) {
			grown := make([]byte, len(s.big), min(s.bigN, 2*cap(s.big)))
			copy(grown, s.big)
			s.big = grown
		}
		dst = s.big[len(s.big):cap(s.big)]
	} else {
		if s.w == len(s.buf) {
			s.compact(len(s.buf))
		}
		dst = s.buf[s.w:]
	}
	for {
		n, err := unix.Read(fd, dst)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			s.short = true
			return errAgain
		case err != nil:
			return fmt.Errorf("ipc: read: %w", err)
		case n == 0:
			return ErrPeerClosed
		}
		s.short = n < len(dst)
		if s.inBig {
			s.big = s.big[:len(s.big)+n]
		} else {
			s.w += n
		}
		return nil
	}
}

// dispatch hands a frame read by the role holder to the mailbox of its
// tag (a copy, since the buffer is reused) or to the handler.
func (c *Conn) dispatch(tag uint64, payload []byte) error {
	c.mu.Lock()
	if m := c.boxes[tag]; m != nil {
		if max := c.opt.MaxMailboxBytes; max >= 0 && m.queued+len(payload) > max {
			c.mu.Unlock()
			return &MailboxFullError{Tag: tag, Max: int64(max)}
		}
		m.queued += len(payload)
		m.queue = append(m.queue, append([]byte(nil), payload...))
		if m.waiting {
			c.removeFollowerLocked(m)
			m.signal()
		}
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	if c.opt.Handler != nil {
		return c.opt.Handler(tag, payload)
	}
	return nil
}

// takeRole gives the caller the reading role if no one holds it.
func (c *Conn) takeRoleLocked() bool {
	if c.reading {
		return false
	}
	c.reading = true
	return true
}

// releaseRoleLocked gives up the reading role and wakes the first mailbox
// waiting for it, which then reads.
func (c *Conn) releaseRoleLocked() {
	c.reading = false
	if len(c.followers) > 0 {
		m := c.followers[0]
		c.followers = c.followers[1:]
		m.waiting = false
		m.signal()
	}
}

func (c *Conn) releaseRole() {
	c.mu.Lock()
	c.releaseRoleLocked()
	c.mu.Unlock()
}

func (c *Conn) removeFollowerLocked(m *Mailbox) {
	m.waiting = false
	for i, f := range c.followers {
		if f == m {
			c.followers = append(c.followers[:i], c.followers[i+1:]...)
			return
		}
	}
}
