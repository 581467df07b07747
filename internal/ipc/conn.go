package ipc

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Options configure one end of a connection. The zero value is a useful
// default.
type Options struct {
	// MaxFrameBytes bounds the payload of one frame, sent or received.
	// A larger frame is refused on sending and fails the connection on
	// receiving. Default DefaultMaxFrameBytes.
	MaxFrameBytes int
	// ReadBufferBytes is the size of the read buffer. Frames that fit are
	// read with no allocation and handed over in place; larger ones get a
	// buffer of their own, grown as their bytes arrive. Default 64 KiB.
	ReadBufferBytes int
	// MaxQueuedBytes bounds the frames queued for writing while another
	// goroutine writes; Queue and Send wait for room beyond it. Default
	// 4 MiB.
	MaxQueuedBytes int
	// MaxMailboxBytes bounds the payload bytes waiting in one mailbox for
	// its owner; a frame beyond it fails the connection with a
	// *MailboxFullError (a peer that is not trusted could otherwise make
	// this side hold any amount). Default 2 × MaxFrameBytes; negative
	// means no limit, for a trusted peer whose answers are bounded
	// elsewhere.
	MaxMailboxBytes int
	// WriteTimeout is how long a write may wait for the peer to make room
	// before the connection fails with ErrWriteTimeout. Default 10 s;
	// negative means no limit.
	WriteTimeout time.Duration
	// SpinBudget is how long a goroutine waiting in Mailbox.Next retries
	// the empty pipe before it blocks in poll, while its recent waits
	// predict a frame soon (a frame that comes while the reader spins
	// costs no wake-up of a sleeping thread). Default DefaultSpinBudget;
	// negative never spins.
	SpinBudget time.Duration
	// Handler receives the frames that no mailbox claims, on whichever
	// goroutine is reading: the one in Serve or a Mailbox.Next. payload is
	// valid only until Handler returns. Handler must not block for long
	// (start a goroutine for slow work) and must not call Mailbox.Next;
	// it may call Send, or Queue to have its answers to the frames read
	// together written together once they are all handled. A non-nil
	// error fails the connection: Serve and every waiting Next return it.
	// Without a Handler such frames are dropped.
	Handler func(tag uint64, payload []byte) error

	// loadavg is the file the spin reads the host's runnable threads
	// from: "" is /proc/loadavg, "-" none (tests).
	loadavg string
}

func (o Options) withDefaults() Options {
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if o.ReadBufferBytes <= 0 {
		o.ReadBufferBytes = 64 << 10
	}
	if o.ReadBufferBytes < HeaderBytes {
		o.ReadBufferBytes = HeaderBytes
	}
	if o.MaxMailboxBytes == 0 {
		o.MaxMailboxBytes = 2 * o.MaxFrameBytes
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = 4 << 20
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.SpinBudget == 0 {
		o.SpinBudget = DefaultSpinBudget
	}
	return o
}

// Conn is one end of a framed duplex connection between a supervisor and
// one worker process, over two pipes (one each way) read and written with
// blocking system calls on the calling goroutines' own threads — never
// the Go netpoller. It is safe for concurrent use.
//
// Frames carry a tag and an opaque payload. Frames are received either
// by a goroutine in Serve, which hands each to Options.Handler (or to the
// mailbox of its tag), or by a goroutine waiting in Mailbox.Next, which
// reads the connection itself while no other goroutine does: a reply then
// reaches the goroutine that waits for it with no hand-off between
// threads.
type Conn struct {
	opt Options
	rfd int // read end of the pipe from the peer
	wfd int // write end of the pipe to the peer
	cfd int // eventfd, readable once the connection is closed or failed
	lfd int // eventfd that wakes the mailbox holding the reading role
	sw  *serveWait
	// downCh is closed once the connection is closed or failed (Serve
	// waits on it while it steps back).
	downCh   chan struct{}
	downOnce sync.Once
	once     sync.Once
	// down is set once err is: a spinning reader looks at it between
	// tries instead of taking mu.
	down atomic.Bool

	mu sync.Mutex
	// users counts goroutines that may use the descriptors; they are
	// closed when the last one leaves after Close.
	users  int
	closed bool
	// err is why the connection stopped working, nil while it works.
	err error

	// reading is true while one goroutine holds the reading role; rs is
	// owned by that goroutine.
	reading   bool
	rs        readState
	boxes     map[uint64]*Mailbox
	followers []*Mailbox

	// Writing: pending holds frames queued while flushing is true (one
	// goroutine writes at a time); space is signalled when pending is
	// taken for writing or the connection fails.
	pending  []byte
	spare    []byte
	flushing bool
	space    sync.Cond
	iov      [2]unix.Iovec
	hdr      [HeaderBytes]byte
}

// New returns a connection that reads frames from descriptor r and writes
// them to descriptor w (the ends of two pipes, or one stream socket given
// twice) and takes ownership of both: Close closes them. Both are switched
// to non-blocking mode, so they must not be shared with another process
// (each end of a pipe is its own open file; the peer's are distinct).
func New(r, w int, opt Options) (*Conn, error) {
	opt = opt.withDefaults()
	c := &Conn{opt: opt, rfd: r, wfd: w, cfd: -1, lfd: -1, boxes: map[uint64]*Mailbox{}, downCh: make(chan struct{})}
	c.space.L = &c.mu
	c.rs.buf = make([]byte, opt.ReadBufferBytes)
	c.rs.short = true
	c.rs.spin = spinState{budget: max(opt.SpinBudget, 0), score: scoreMax, host: hostLoad{fd: -1, cpus: runtime.NumCPU()}}
	fail := func(err error) (*Conn, error) {
		for _, fd := range []int{c.cfd, c.lfd} {
			if fd >= 0 {
				_ = unix.Close(fd)
			}
		}
		return nil, err
	}
	for _, fd := range []int{r, w} {
		if err := unix.SetNonblock(fd, true); err != nil {
			return fail(fmt.Errorf("ipc: descriptor %d: %w", fd, err))
		}
	}
	var err error
	if c.cfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fail(fmt.Errorf("ipc: eventfd: %w", err))
	}
	if c.lfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fail(fmt.Errorf("ipc: eventfd: %w", err))
	}
	if c.sw, err = newServeWait(r, c.cfd); err != nil {
		return fail(err)
	}
	if c.rs.spin.budget > 0 && opt.loadavg != "-" {
		path := opt.loadavg
		if path == "" {
			path = "/proc/loadavg"
		}
		c.rs.spin.host.fd = openHostLoad(path)
	}
	return c, nil
}

// NewParent creates the two pipes between a supervisor and a child
// process. It returns the supervisor's connection and the child's ends —
// the read end of the pipe to the child and the write end of the pipe
// from it — to pass to the child (exec.Cmd.ExtraFiles) and close in the
// parent once the child started: until they are closed here, the parent
// does not see the child's death as the end of the stream.
func NewParent(opt Options) (c *Conn, childRead, childWrite *os.File, err error) {
	var down, up [2]int
	if err := unix.Pipe2(down[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, nil, fmt.Errorf("ipc: pipe: %w", err)
	}
	if err := unix.Pipe2(up[:], unix.O_CLOEXEC); err != nil {
		_ = unix.Close(down[0])
		_ = unix.Close(down[1])
		return nil, nil, nil, fmt.Errorf("ipc: pipe: %w", err)
	}
	c, err = New(up[0], down[1], opt)
	if err != nil {
		for _, fd := range []int{down[0], down[1], up[0], up[1]} {
			_ = unix.Close(fd)
		}
		return nil, nil, nil, err
	}
	return c, os.NewFile(uintptr(down[0]), "ipc-child-read"), os.NewFile(uintptr(up[1]), "ipc-child-write"), nil
}

// Close closes the connection: the peer's reads end, every goroutine in
// Serve, Mailbox.Next or a write returns ErrClosed, and the descriptors
// are closed once the last of them has left. Close does not wait for
// them.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.err == nil {
		c.err = ErrClosed
	}
	c.down.Store(true)
	c.wakeAllLocked()
	if c.users == 0 {
		c.closeFDs()
	}
	return nil
}

// Err returns why the connection stopped working, or nil while it works.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// enter registers a goroutine about to use the descriptors; it fails once
// the connection stopped working.
func (c *Conn) enter() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.users++
	return nil
}

// leave ends what enter began.
func (c *Conn) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaveLocked()
}

func (c *Conn) leaveLocked() {
	c.users--
	if c.closed && c.users == 0 {
		c.closeFDs()
	}
}

func (c *Conn) closeFDs() {
	c.once.Do(func() {
		fds := []int{c.rfd, c.cfd, c.lfd}
		if c.wfd != c.rfd {
			fds = append(fds, c.wfd)
		}
		if c.rs.spin.host.fd >= 0 {
			fds = append(fds, c.rs.spin.host.fd)
		}
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		c.sw.close()
	})
}

// fail records why the connection stopped working (the first reason wins)
// and wakes everyone waiting on it.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err)
}

func (c *Conn) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	c.down.Store(true)
	c.wakeAllLocked()
}

// wakeAllLocked makes every poll on the connection return (the close
// eventfd stays readable for good) and wakes waiting mailboxes and
// writers.
func (c *Conn) wakeAllLocked() {
	if !c.closed || c.users > 0 {
		signalEventfd(c.cfd)
	}
	c.downOnce.Do(func() { close(c.downCh) })
	for _, m := range c.followers {
		m.waiting = false
		m.signal()
	}
	c.followers = nil
	c.space.Broadcast()
}

// signalEventfd adds one to an eventfd.
func signalEventfd(fd int) {
	var one = [8]byte{1}
	_, _ = unix.Write(fd, one[:])
}

// drainEventfd resets an eventfd to zero.
func drainEventfd(fd int) {
	var b [8]byte
	_, _ = unix.Read(fd, b[:])
}

// pollResult says which descriptors a poll found ready.
type pollResult struct {
	ready  bool // the watched descriptor is ready (or hung up / failed)
	closed bool // the connection was closed or failed
	woken  bool // the leader eventfd was signalled
}

// poll waits until fd has events, the connection is closed or failed, or
// (with leader) the leader eventfd is signalled; timeout < 0 waits
// without limit; with fd < 0 only the eventfds are watched.
func (c *Conn) poll(fd int, events int16, leader bool, timeout time.Duration) (pollResult, error) {
	fds := [3]unix.PollFd{{Fd: int32(c.cfd), Events: unix.POLLIN}, {Fd: int32(fd), Events: events}, {Fd: int32(c.lfd), Events: unix.POLLIN}}
	if fd < 0 {
		fds[1].Fd = -1 // poll ignores negative descriptors
	}
	n := 2
	if leader {
		n = 3
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	for {
		_, err := unix.Poll(fds[:n], ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return pollResult{}, fmt.Errorf("ipc: poll: %w", err)
		}
		break
	}
	const anyEvent = unix.POLLIN | unix.POLLOUT | unix.POLLHUP | unix.POLLERR | unix.POLLNVAL
	return pollResult{
		closed: fds[0].Revents != 0,
		ready:  fd >= 0 && fds[1].Revents&anyEvent != 0,
		woken:  leader && fds[2].Revents != 0,
	}, nil
}
