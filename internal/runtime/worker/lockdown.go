package worker

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The worker's filesystem lockdown. Once a worker has opened everything it
// needs (its socket, /proc/self/status for the memory accounting, the
// local time zone), nothing it runs may touch the filesystem again: no
// script, and no bug in the engine a script could reach (goja resolving a
// source map named in the source was one). Two independent layers:
//
//   - a seccomp-bpf filter, installed on every thread of the process
//     (SECCOMP_FILTER_FLAG_TSYNC), makes every system call that names a
//     path — open, openat, openat2, exec, stat, mkdir, unlink, xattrs,
//     mounts, inotify … — and io_uring (which can open files on its own)
//     and socket creation fail with EPERM;
//   - a Landlock ruleset with no rule denies every filesystem access right
//     the kernel knows (and TCP bind/connect, and, from ABI 7, signals and
//     abstract sockets beyond the worker). Landlock restricts the calling
//     thread; it reaches every thread with LANDLOCK_RESTRICT_SELF_TSYNC
//     (ABI 8) or syscall.AllThreadsSyscall (binaries without cgo), and
//     otherwise each thread that runs a script, before it runs one.
//
// Both are reported in the Ready frame, with the error an open of "/"
// got afterwards: the proof `ptcd check` shows.

// lockdown is what the worker put in force.
type lockdown struct {
	landlockABI   int
	landlockScope string // "all threads", "script threads" or "" (none)
	landlockErr   string
	seccomp       bool
	seccompErr    string
	// probeErr is the error an open of "/" got after the lockdown; empty
	// when the open succeeded.
	probeErr string

	// ruleset is the Landlock ruleset each script thread restricts itself
	// with when the process could not be restricted as a whole.
	ruleset    int
	mu         sync.Mutex
	restricted map[int]bool // threads restricted so far (script threads scope)
}

// Landlock scopes.
const (
	scopeAllThreads    = "all threads"
	scopeScriptThreads = "script threads"
)

// lockDown applies both layers and probes the result.
func lockDown() *lockdown { return lockDownWith(true, true) }

// lockDownWith applies the layers asked for (tests check each alone).
func lockDownWith(landlock, seccomp bool) *lockdown {
	l := &lockdown{ruleset: -1}
	if landlock {
		l.landlock()
	}
	if seccomp {
		if err := installSeccomp(); err != nil {
			l.seccompErr = err.Error()
		} else {
			l.seccomp = true
		}
	}
	// The probe runs on a thread restricted as a script thread is (the
	// thread stays restricted).
	runtime.LockOSThread()
	l.restrictThread()
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	runtime.UnlockOSThread()
	if err == nil {
		_ = unix.Close(fd)
	} else {
		l.probeErr = err.Error()
	}
	return l
}

// landlock creates the ruleset and restricts as many threads as it can.
func (l *lockdown) landlock() {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		l.landlockErr = "not available on this kernel: " + errno.Error()
		return
	}
	l.landlockABI = int(abi)
	attr, size := landlockAttr(l.landlockABI)
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		l.landlockErr = "creating the ruleset: " + errno.Error()
		return
	}
	l.ruleset = int(fd)
	if l.landlockABI >= 8 {
		if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, unix.LANDLOCK_RESTRICT_SELF_TSYNC, 0); errno == 0 {
			l.landlockScope = scopeAllThreads
			l.closeRuleset()
			return
		}
	}
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno == 0 {
		l.landlockScope = scopeAllThreads
		l.closeRuleset()
		return
	} else if errno != syscall.ENOTSUP {
		l.landlockErr = "restricting the process: " + errno.Error()
		l.closeRuleset()
		return
	}
	// A binary linked with cgo cannot run a system call on every thread:
	// each thread that runs a script restricts itself first (restrictThread).
	l.landlockScope = scopeScriptThreads
	l.restricted = map[int]bool{}
}

func (l *lockdown) closeRuleset() {
	_ = unix.Close(l.ruleset)
	l.ruleset = -1
}

// restrictThread restricts the calling thread, which must be locked to its
// goroutine, when Landlock could not restrict the whole process. A thread
// stays restricted for the life of the process.
func (l *lockdown) restrictThread() {
	if l == nil || l.landlockScope != scopeScriptThreads {
		return
	}
	tid := unix.Gettid()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.restricted[tid] {
		return
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(l.ruleset), 0, 0); errno == 0 {
		l.restricted[tid] = true
	}
}

// landlockAttr returns the ruleset attribute for a Landlock ABI version:
// every access right that version knows is handled (and, with no rule,
// denied), and its size as that version expects it.
func landlockAttr(abi int) (unix.LandlockRulesetAttr, uintptr) {
	var a unix.LandlockRulesetAttr
	a.Handled_access_fs = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	size := unsafe.Sizeof(a.Handled_access_fs)
	if abi >= 2 {
		a.Handled_access_fs |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		a.Handled_access_fs |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 4 {
		a.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(a.Handled_access_net)
	}
	if abi >= 5 {
		a.Handled_access_fs |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 6 {
		a.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		// From ABI 7 threads of one process may always signal each other,
		// whatever their domains (earlier kernels would stop the Go
		// runtime's preemption signals between threads restricted apart).
		if abi >= 7 {
			a.Scoped |= unix.LANDLOCK_SCOPE_SIGNAL
		}
		size += unsafe.Sizeof(a.Scoped)
	}
	return a, size
}

// errSeccompArch means this architecture has no syscall table here.
var errSeccompArch = errors.New("no system call table for this architecture")

// installSeccomp installs the filter on every thread of the process.
func installSeccomp() error {
	if seccompArch == 0 {
		return errSeccompArch
	}
	prog := seccompFilter(deniedSyscalls())
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp: thread %d could not be synchronised", r)
	}
	return nil
}

// seccompFilter returns a BPF program that fails the denied system calls,
// and every call made with another architecture's convention (i386 via
// int 0x80, x32), with EPERM, and allows the rest.
func seccompFilter(denied []uintptr) []unix.SockFilter {
	const (
		ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		// Offsets in struct seccomp_data.
		offNr   = 0
		offArch = 4
	)
	deny := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)&unix.SECCOMP_RET_DATA)
	n := len(denied)
	// Layout: arch check, x32 check, one jeq per denied call, allow, deny.
	// Every jump to deny skips forward to the last instruction.
	p := []unix.SockFilter{
		{Code: ldAbs, K: offArch},
		{Code: jeq, Jt: 1, Jf: 0, K: seccompArch},
		{Code: ret, K: deny},
		{Code: ldAbs, K: offNr},
		{Code: jge, Jt: uint8(n + 1), Jf: 0, K: seccompSyscallBit},
	}
	for i, nr := range denied {
		p = append(p, unix.SockFilter{Code: jeq, Jt: uint8(n - i), Jf: 0, K: uint32(nr)})
	}
	return append(p, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW}, unix.SockFilter{Code: ret, K: deny})
}
