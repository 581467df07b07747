package worker

import (
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// The worker's hardening: what it puts in force before it runs any script,
// and reports to the supervisor in its Ready frame.

// setup applies the worker's limits and hardening and reports them.
func (c *child) setup(init *wp.Init) *wp.Ready {
	c.density = int(init.GetExecutionsPerWorker())
	if c.density <= 0 {
		c.density = 1
	}
	c.exec = newExecutor(int(init.GetProgramCache()))
	if c.density == 1 {
		debug.SetGCPercent(executionGCPercent)
	}
	debug.SetMaxStack(maxGoStack)
	r := &wp.Ready{Pid: int32(os.Getpid())}
	if n := init.GetMemoryLimitBytes(); n > 0 {
		lim := &unix.Rlimit{Cur: uint64(n), Max: uint64(n)}
		if err := unix.Setrlimit(unix.RLIMIT_DATA, lim); err != nil {
			r.RlimitError = err.Error()
		} else {
			c.rlimit = uint64(n)
			r.RlimitDataBytes = n
			// GC harder as the process nears its hard limit.
			debug.SetMemoryLimit(n / 10 * 8)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err == nil {
		v, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		r.NoNewPrivs = v == 1
	}
	raiseOOMScore()
	r.EnvironmentSize = int32(len(os.Environ()))
	r.InheritedFds = c.inherited
	r.OpenFds = openFDs()
	if pg, err := unix.Getpgid(0); err == nil {
		r.ProcessGroup = int32(pg)
	}
	r.NetNamespace, _ = os.Readlink("/proc/self/ns/net")
	// Open what the worker reads later, before the lockdown: its status
	// (VmData, for the per-execution RLIMIT_DATA) and the local time zone
	// (which the time package loads on first use).
	c.status = openProcStatus()
	_ = time.Now().Location().String()
	_, _ = time.Now().Zone()
	l := lockDown()
	c.exec.threadSetup = l.restrictThread
	r.Lockdown = &wp.Lockdown{
		LandlockAbi:    int32(l.landlockABI),
		LandlockScope:  l.landlockScope,
		LandlockError:  l.landlockErr,
		Seccomp:        l.seccomp,
		SeccompError:   l.seccompErr,
		OpenProbeError: l.probeErr,
	}
	runtime.GC()
	c.baseLive = liveHeap()
	c.vmData.Store(c.status.vmData())
	r.BaselineHeapBytes = c.baseLive
	return r
}

// maxGoStack bounds a worker goroutine's stack (the Go default is 1 GB),
// and stackBound raises it with an execution's memory limit. A script
// can make goja recurse in Go with no script frame between the levels,
// where no guard can count them: an object whose Symbol.toPrimitive is
// itself (`o[Symbol.toPrimitive] = o; String(o)`), or a proxy whose trap
// is the proxy. goja's "is not a method" error converts the value to a
// string, which looks the same method up again. The stack grows until the
// Go runtime ends the process, and the supervisor reports SCRIPT_ERROR
// (deathOf). With the default bound that took 1–3 s and a gigabyte of
// stack, and 30 s (the deadline) for the proxy, whose recursion
// allocates: the collector scans the whole stack in every cycle. At
// 128 MiB it takes 0.6–0.9 s (more under a memory limit the stack
// outgrows, where the collector runs without pause).
//
// Legitimate recursion in Go is bounded by the engine (a thousand script
// frames, nesting limits) except along a prototype chain, which goja
// walks recursively, one level per object, as deep as memory allows: a
// chain of five million objects needs more than 128 MiB of stack, and
// fits in an execution with a 2 GiB memory limit. So the bound is half
// the execution's memory limit when that is more (stackBound): the stack
// is the execution's memory, and the Go runtime copies it as it grows
// (the old and the new at once, one and a half times its size).
const maxGoStack = 128 << 20

// stackBound is the stack bound of an execution with a memory limit of
// memBytes.
func stackBound(memBytes int64) int {
	return int(max(maxGoStack, memBytes/2))
}

// workerOOMScoreAdj is the oom_score_adj a worker gives itself: the most
// the kernel allows, so that when the host (or the container's cgroup)
// runs out of memory the kernel's OOM killer ends a worker — one
// execution, reported as a crash of its worker — before the supervisor,
// which serves every execution. Raising one's own score needs no
// privilege; a host whose /proc refuses it leaves the score as it was.
const workerOOMScoreAdj = 1000

// raiseOOMScore sets the worker's oom_score_adj to workerOOMScoreAdj.
func raiseOOMScore() {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(workerOOMScoreAdj)), 0)
}

// procStatus reads /proc/self/status through a descriptor opened once
// (the worker may not open files after its lockdown).
type procStatus struct {
	mu  sync.Mutex
	fd  int
	buf []byte
}

// openProcStatus opens /proc/self/status; a nil result reads as unknown.
func openProcStatus() *procStatus {
	fd, err := unix.Open("/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return &procStatus{fd: fd, buf: make([]byte, 8<<10)}
}

// vmData returns the VmData of this process in bytes (what RLIMIT_DATA
// counts), or 0 when unknown.
func (s *procStatus) vmData() int64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := unix.Pread(s.fd, s.buf, 0)
	if err != nil || n <= 0 {
		return 0
	}
	return statusField(s.buf[:n], "VmData:")
}

// closeInherited closes every descriptor above writeFD that the Go
// runtime did not open itself, and returns them. The runtime opens its
// poller (an eventpoll and an eventfd) and keeps the cgroup CPU quota
// files open before main runs; those are kept.
func closeInherited() []int32 {
	var closed []int32
	for _, fd := range openFDs() {
		if fd <= writeFD || runtimeFD(fd) {
			continue
		}
		if unix.Close(int(fd)) == nil {
			closed = append(closed, fd)
		}
	}
	return closed
}

// runtimeFD reports whether descriptor fd is one the Go runtime opens.
func runtimeFD(fd int32) bool {
	var buf [256]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(int(fd)), buf[:])
	if err != nil {
		return false
	}
	target := string(buf[:n])
	return target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]" ||
		strings.HasPrefix(target, "/sys/fs/cgroup/")
}

// openFDs lists the open descriptors of this process (except the one it
// uses to read the list). It uses raw system calls: an *os.File would start
// the runtime's poller, whose descriptors closeInherited must not close.
func openFDs() []int32 {
	d, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(d)
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := unix.ReadDirent(d, buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	var fds []int32
	for _, name := range names {
		if n, err := strconv.Atoi(name); err == nil && n != d {
			fds = append(fds, int32(n))
		}
	}
	sort.Slice(fds, func(i, j int) bool { return fds[i] < fds[j] })
	return fds
}
