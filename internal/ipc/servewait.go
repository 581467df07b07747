package ipc

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// serveWait is how Serve waits for frames: parked in the Go runtime's
// network poller, on an epoll set of its own that watches the read end
// and the close eventfd, instead of blocked in poll(2). A goroutine
// blocked in a system call keeps its P (Go's logical processor); in a
// process with GOMAXPROCS 2 (a worker, a ptcd on a 2-CPU host) Serve and
// a Mailbox.Next waiting in poll hold both, so the runtime's sysmon takes
// one back after 20 µs on every wait and wakes another thread to run it —
// three or more context switches per call, ticking sysmon at its fastest
// rate. Parked in the poller, Serve holds no P and wakes no thread until
// a frame or the close comes. A mailbox that waits still polls: the frame
// it waits for goes straight to its thread.
type serveWait struct {
	epfd int      // the epoll set (owned by file)
	rfd  int      // the connection's read end, watched one-shot
	file *os.File // epfd, registered with the runtime's poller
	raw  syscall.RawConn
	evs  [2]unix.EpollEvent
}

// newServeWait returns the wait for a connection that reads rfd and is
// closed through cfd.
func newServeWait(rfd, cfd int) (*serveWait, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("ipc: epoll_create1: %w", err)
	}
	for _, fd := range []int{rfd, cfd} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if fd == rfd {
			ev.Events |= unix.EPOLLONESHOT
		}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			_ = unix.Close(epfd)
			return nil, fmt.Errorf("ipc: epoll_ctl: %w", err)
		}
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("ipc: epoll descriptor: %w", err)
	}
	w := &serveWait{epfd: epfd, rfd: rfd, file: os.NewFile(uintptr(epfd), "ipc-serve")}
	if w.raw, err = w.file.SyscallConn(); err != nil {
		_ = w.file.Close()
		return nil, fmt.Errorf("ipc: epoll descriptor: %w", err)
	}
	return w, nil
}

// wait returns once rfd is readable (or hung up) or the connection was
// closed or failed (cfd readable). The epoll set is level-triggered: a
// frame that arrived and was taken by a mailbox no longer counts. The
// read end is watched one-shot, armed here: once it has been reported,
// frames wake no thread of the runtime's poller until Serve waits again
// (while Serve steps back for a mailbox that reads, the frames of every
// call would).
func (w *serveWait) wait(cfd int) (pollResult, error) {
	var res pollResult
	var werr error
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(w.rfd)}
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_MOD, w.rfd, &ev); err != nil {
		return pollResult{}, fmt.Errorf("ipc: epoll_ctl: %w", err)
	}
	err := w.raw.Read(func(uintptr) bool {
		n, err := unix.EpollWait(w.epfd, w.evs[:], 0)
		if err == unix.EINTR {
			return false
		}
		if err != nil {
			werr = err
			return true
		}
		for _, ev := range w.evs[:n] {
			if int(ev.Fd) == cfd {
				res.closed = true
			} else {
				res.ready = true
			}
		}
		return n > 0
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return pollResult{}, fmt.Errorf("ipc: epoll_wait: %w", err)
	}
	return res, nil
}

// close closes the epoll set.
func (w *serveWait) close() { _ = w.file.Close() }
