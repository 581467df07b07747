package worker

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ptcrun/ptc/internal/fault"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// The worker process as the supervisor sees it: starting it, the
// handshake, sending to it, killing it, and what it says on stderr.

// proc is one worker process, as the supervisor sees it.
type proc struct {
	pool     *Pool
	cmd      *exec.Cmd
	pid      int
	conn     net.Conn
	r        *frameReader
	w        *frameWriter
	stderr   *head
	ready    *wp.Ready
	startRSS int64

	// active, runs, retired, dead and idleSince are guarded by pool.mu.
	active  int
	runs    int
	retired bool
	dead    bool
	// idleSince is when the worker last became idle (active went to 0).
	idleSince time.Time

	mu       sync.Mutex
	execs    map[uint64]*execState
	nextSlot uint64
	killOnce sync.Once
	// poolKill holds the kind and message of a Close.
	poolKillKind fault.Kind
	poolKillMsg  string
	// stopped says why the supervisor ended the worker; empty when it died
	// on its own.
	stopped string
}

func (w *proc) runsSnapshot() int {
	w.pool.mu.Lock()
	defer w.pool.mu.Unlock()
	return w.runs
}

// register adds an execution; false if the worker is gone.
func (w *proc) register(es *execState) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.execs == nil {
		return false
	}
	w.nextSlot++
	es.slot = w.nextSlot
	w.execs[es.slot] = es
	return true
}

// frameWriteTimeout bounds one frame write to a worker: a worker that
// stops reading is killed rather than blocking the supervisor.
const frameWriteTimeout = 10 * time.Second

func (w *proc) send(m *wp.SupervisorFrame) error {
	err := w.w.write(m)
	if err != nil {
		w.stop("a frame could not be written to it")
	}
	return err
}

// kill ends the worker process (its whole process group).
func (w *proc) kill() {
	w.killOnce.Do(func() {
		_ = unix.Kill(-w.pid, unix.SIGKILL)
		_ = w.cmd.Process.Kill()
	})
}

// stop kills the worker for a reason of the supervisor's (the first one
// given is kept, for the log).
func (w *proc) stop(reason string) {
	w.mu.Lock()
	if w.stopped == "" {
		w.stopped = reason
	}
	w.mu.Unlock()
	w.kill()
}

// killFor kills the worker because execution es overran; es fails with
// kind, the worker's other executions with INTERNAL.
func (w *proc) killFor(es *execState, kind fault.Kind) {
	w.mu.Lock()
	es.killKind = kind
	w.mu.Unlock()
	w.stop("an execution ended " + kind.String() + " and did not stop")
}

// killAll kills the worker; all its executions fail with kind and msg.
func (w *proc) killAll(kind fault.Kind, msg string) {
	w.mu.Lock()
	w.poolKillKind, w.poolKillMsg = kind, msg
	w.mu.Unlock()
	w.stop(msg)
}

// spawn starts one worker process and completes its handshake.
func (p *Pool) spawn() (*proc, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("worker: creating a socket pair: %w", err)
	}
	parent := os.NewFile(uintptr(fds[0]), "ptc-worker-supervisor")
	child := os.NewFile(uintptr(fds[1]), "ptc-worker")
	defer parent.Close()

	p.mu.Lock()
	netns := !p.cfg.NoNetworkNamespace && p.netnsErr == nil
	p.mu.Unlock()
	cmd, stderr, err := p.start(child, netns)
	if err != nil && netns {
		// Creating a network namespace needs CAP_SYS_ADMIN; without it,
		// run without one and report that.
		p.mu.Lock()
		p.netnsErr = err
		p.mu.Unlock()
		cmd, stderr, err = p.start(child, false)
	}
	// The child holds its own copy now; without ours, its exit is an EOF.
	_ = child.Close()
	if err != nil {
		return nil, fmt.Errorf("worker: starting %s: %w", p.cfg.Executable, err)
	}
	p.stats.started.Add(1)
	conn, err := net.FileConn(parent)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("worker: socket: %w", err)
	}
	w := &proc{pool: p, cmd: cmd, pid: cmd.Process.Pid, conn: conn, stderr: stderr,
		r: newFrameReader(conn, p.cfg.MaxFrameBytes), w: newFrameWriter(conn),
		execs: map[uint64]*execState{}}
	w.w.before = func() { _ = conn.SetWriteDeadline(time.Now().Add(frameWriteTimeout)) }
	if err := w.handshake(p.cfg); err != nil {
		w.kill()
		_ = cmd.Wait()
		_ = conn.Close()
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			return nil, fmt.Errorf("worker: start-up handshake failed: %w (worker said: %s)", err, msg)
		}
		return nil, fmt.Errorf("worker: start-up handshake failed: %w; the executable must call worker.Main (or ptc.RunWorker) at the top of main", err)
	}
	w.startRSS = procRSS(w.pid)
	p.mu.Lock()
	if p.facts == nil {
		f := p.workerFacts(w.ready)
		p.facts = &f
	}
	p.mu.Unlock()
	return w, nil
}

// start starts the worker process with an empty environment, only the
// socket as an extra descriptor, its own process group and, if netns, a
// private network namespace.
func (p *Pool) start(child *os.File, netns bool) (*exec.Cmd, *head, error) {
	cmd := exec.Command(p.cfg.Executable, workerArg)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{child}
	stderr := &head{max: stderrHead}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if netns {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return cmd, stderr, nil
}

// handshake sends Init and waits for Ready.
func (w *proc) handshake(cfg Config) error {
	init := &wp.Init{
		MemoryLimitBytes:    cfg.WorkerMemoryBytes,
		ExecutionsPerWorker: int32(cfg.ExecutionsPerWorker),
		ProgramCache:        int32(cfg.ProgramCache),
	}
	if err := w.w.write(&wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Init{Init: init}}); err != nil {
		return err
	}
	_ = w.conn.SetReadDeadline(time.Now().Add(cfg.StartTimeout))
	var f wp.WorkerFrame
	if err := w.r.read(&f); err != nil {
		return err
	}
	_ = w.conn.SetReadDeadline(time.Time{})
	r := f.GetReady()
	if r == nil {
		return errors.New("the first frame is not ready")
	}
	if int(r.GetPid()) != w.pid {
		return fmt.Errorf("the worker reports pid %d, expected %d", r.GetPid(), w.pid)
	}
	w.ready = r
	return nil
}

// stderrHead is how much of a worker's stderr is kept for diagnosis: the
// start, where the Go runtime writes a fatal error before the stacks.
const stderrHead = 8 << 10

// head keeps the first max bytes written to it and counts the rest. It is
// safe for concurrent use.
type head struct {
	mu    sync.Mutex
	max   int
	b     []byte
	total int64
}

// Write implements io.Writer.
func (t *head) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	t.total += int64(n)
	if room := t.max - len(t.b); room < len(b) {
		b = b[:max(room, 0)]
	}
	t.b = append(t.b, b...)
	return n, nil
}

// written returns how many bytes were written, kept or not.
func (t *head) written() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// String returns the kept bytes.
func (t *head) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var oomInUse = regexp.MustCompile(`out of memory: cannot allocate (\d+)-byte block \((\d+) in use\)`)

// deathCause is what a dead worker's stderr says about why it died.
type deathCause int

const (
	// causeUnknown: nothing a script is known to cause.
	causeUnknown deathCause = iota
	// causeMemory: the Go runtime ran out of memory — the heap could not
	// grow ("out of memory"), or a stack or a thread could not be mapped
	// ("cannot allocate memory", a failed pthread_create or clone): under
	// the worker's RLIMIT_DATA, a new thread's stack is memory like any
	// other.
	causeMemory
	// causeStack: a goroutine's stack passed the Go runtime's maximum (a
	// recursion or nesting the engine did not bound).
	causeStack
)

// memoryDeaths and stackDeaths are what the Go runtime writes when it dies
// of those causes.
var (
	memoryDeaths = []string{"out of memory", "cannot allocate memory", "pthread_create failed",
		"failed to create new OS thread", "fatal error: newosproc"}
	stackDeaths = []string{"goroutine stack exceeds", "fatal error: stack overflow"}
)

// deathOf classifies a dead worker's stderr, and for a memory death returns
// the bytes the runtime held plus the refused allocation when the message
// gives them.
func deathOf(stderr string) (deathCause, int64) {
	for _, m := range stackDeaths {
		if strings.Contains(stderr, m) {
			return causeStack, 0
		}
	}
	for _, m := range memoryDeaths {
		if strings.Contains(stderr, m) {
			if g := oomInUse.FindStringSubmatch(stderr); g != nil {
				a, _ := strconv.ParseInt(g[1], 10, 64)
				u, _ := strconv.ParseInt(g[2], 10, 64)
				return causeMemory, a + u
			}
			return causeMemory, 0
		}
	}
	return causeUnknown, 0
}

// procRSS returns the resident memory of a process in bytes, 0 if unknown.
func procRSS(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := s.Bytes(); len(line) > 6 && string(line[:6]) == "VmRSS:" {
			return statusField(line, "VmRSS:")
		}
	}
	return 0
}

// statusField returns a "kB" field of /proc/<pid>/status in bytes.
func statusField(b []byte, key string) int64 {
	i := strings.Index(string(b), key)
	if i < 0 {
		return 0
	}
	rest := b[i+len(key):]
	if j := strings.IndexByte(string(rest), '\n'); j >= 0 {
		rest = rest[:j]
	}
	f := strings.Fields(string(rest))
	if len(f) == 0 {
		return 0
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0
	}
	return n << 10
}
