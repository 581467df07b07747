package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/ipc"
	wp "github.com/ptcrun/ptc/internal/workerproto"
)

// The worker process as the supervisor sees it: spawning it (the process
// itself is started and killed in lifecycle.go), the handshake, sending
// to it, and what it says on stderr.

// proc is one worker process, as the supervisor sees it.
type proc struct {
	pool     *Pool
	cmd      *exec.Cmd
	pid      int
	conn     *ipc.Conn
	stderr   *head
	ready    *wp.Ready
	startRSS int64

	// life is where the worker is in its life (lifecycle.go): the one
	// owner of whether it is ready, busy, draining, killed or dead.
	life lifecycle

	// active, runs and idleSince are guarded by pool.mu.
	active int
	runs   int
	// idleSince is when the worker last became idle (active went to 0).
	idleSince time.Time

	mu    sync.Mutex
	execs map[uint64]*execState
	// busy[i] is true while lane i+1 runs an execution; modules are the
	// WebAssembly modules the worker was sent, most recent last.
	busy     []bool
	modules  []string
	nextSlot uint64
	// clocks[i] is lane i+1's thread's /proc schedstat, opened on the
	// first CPU watch of an execution on it (laneClock) and closed when
	// the worker has ended.
	clocks   []*os.File
	killOnce sync.Once
	// poolKill holds the kind and message of a Close.
	poolKillKind fault.Kind
	poolKillMsg  string
}

func (w *proc) runsSnapshot() int {
	w.pool.mu.Lock()
	defer w.pool.mu.Unlock()
	return w.runs
}

// register gives an execution its slot (a number unique on this
// connection), a free lane and the mailbox its frames arrive in; false if
// the worker is gone or has no free lane.
func (w *proc) register(es *execState) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.execs == nil {
		return false
	}
	lane := -1
	for i, b := range w.busy {
		if !b {
			lane = i
			break
		}
	}
	if lane < 0 {
		return false
	}
	w.nextSlot++
	mb, err := w.conn.Mailbox(w.nextSlot)
	if err != nil {
		return false
	}
	w.busy[lane] = true
	es.slot, es.lane, es.mb = w.nextSlot, uint64(lane+1), mb
	w.execs[es.slot] = es
	return true
}

// unregister frees an execution's lane and closes its mailbox: frames
// still arriving for it go to the connection's Handler, which drops them.
func (w *proc) unregister(es *execState) {
	w.mu.Lock()
	if w.execs != nil && w.execs[es.slot] == es {
		delete(w.execs, es.slot)
	}
	if es.lane > 0 && int(es.lane) <= len(w.busy) {
		w.busy[es.lane-1] = false
	}
	w.mu.Unlock()
	if es.mb != nil {
		es.mb.Close()
	}
}

// send sends one frame to the worker; a failed write (the worker stopped
// reading, or is gone) kills it.
func (w *proc) send(tag uint64, m *wp.SupervisorFrame) error {
	err := sendFrame(w.conn, tag, m, false)
	if err != nil {
		w.kill()
	}
	return err
}

// queue holds a frame back until the connection's next write: answers
// to frames read together go out together.
func (w *proc) queue(tag uint64, m *wp.SupervisorFrame) error {
	err := sendFrame(w.conn, tag, m, true)
	if err != nil {
		w.stop(stopBroken, "a frame could not be written to it")
	}
	return err
}

// reasonPoolClosed is why the pool stops a worker that finished starting
// after Close.
const reasonPoolClosed = "the worker pool was shut down"

// killFor kills the worker because execution es overran; es fails with
// kind, the worker's other executions with INTERNAL.
func (w *proc) killFor(es *execState, kind fault.Kind) {
	w.mu.Lock()
	es.killKind = kind
	w.mu.Unlock()
	w.stop(stopLimit, "an execution ended "+kind.String()+" and did not stop")
}

// killAll kills the worker; all its executions fail with kind and msg.
func (w *proc) killAll(kind fault.Kind, msg string) {
	w.mu.Lock()
	w.poolKillKind, w.poolKillMsg = kind, msg
	w.mu.Unlock()
	w.stop(stopClosed, msg)
}

// spawn starts one worker process and completes its handshake.
func (p *Pool) spawn() (*proc, error) {
	w := &proc{pool: p, execs: map[uint64]*execState{}, busy: make([]bool, p.cfg.ExecutionsPerWorker)}
	conn, childR, childW, err := ipc.NewParent(ipc.Options{MaxFrameBytes: p.cfg.MaxFrameBytes, Handler: w.stray})
	if err != nil {
		return nil, fmt.Errorf("worker: creating its pipes: %w", err)
	}
	w.conn = conn

	p.mu.Lock()
	netns := !p.cfg.NoNetworkNamespace && p.netnsErr == nil
	p.mu.Unlock()
	cmd, stderr, err := p.start(childR, childW, netns)
	if err != nil && netns {
		// Creating a network namespace needs CAP_SYS_ADMIN; without it,
		// run without one and report that.
		p.mu.Lock()
		p.netnsErr = err
		p.mu.Unlock()
		cmd, stderr, err = p.start(childR, childW, false)
	}
	// The child holds its own copies now; without ours, its exit ends the
	// stream.
	_ = childR.Close()
	_ = childW.Close()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("worker: starting %s: %w", p.cfg.Executable, err)
	}
	w.cmd, w.pid, w.stderr = cmd, cmd.Process.Pid, stderr
	w.life.begin(&p.counts)
	if err := w.handshake(p.cfg); err != nil {
		// A worker that does not complete its handshake failed to
		// start: its end is its own, whoever then kills the process.
		w.life.to(stateDied, causeNone, "")
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

// handshake sends Init and waits for Ready, at most StartTimeout. No other
// goroutine reads the connection yet: the wait reads it itself.
func (w *proc) handshake(cfg Config) error {
	init := &wp.Init{
		MemoryLimitBytes:    cfg.WorkerMemoryBytes,
		ExecutionsPerWorker: int32(cfg.ExecutionsPerWorker),
		ProgramCache:        int32(cfg.ProgramCache),
		Wasm: &wp.WASM{RealClock: cfg.WASM.RealClock, RealRandom: cfg.WASM.RealRandom, MaxModules: maxWorkerModules,
			MaxModuleBytes: int64(cfg.WASM.MaxModuleBytes), MaxMemoryBytes: cfg.WASM.MaxMemory, Bounds: boundsPB(cfg.WASM.Bounds)},
	}
	mb, err := w.conn.Mailbox(controlTag)
	if err != nil {
		return err
	}
	defer mb.Close()
	if err := sendFrame(w.conn, controlTag, &wp.SupervisorFrame{Msg: &wp.SupervisorFrame_Init{Init: init}}, false); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StartTimeout)
	defer cancel()
	var f wp.WorkerFrame
	if err := mb.Next(ctx, func(b []byte) error { return proto.Unmarshal(b, &f) }); err != nil {
		return err
	}
	r := f.GetReady()
	if r == nil {
		return errors.New("the first frame is not ready")
	}
	if int(r.GetPid()) != w.pid {
		return fmt.Errorf("the worker reports pid %d, expected %d", r.GetPid(), w.pid)
	}
	if len(r.GetLaneThreads()) != cfg.ExecutionsPerWorker {
		return fmt.Errorf("the worker reports %d lane threads, expected %d", len(r.GetLaneThreads()), cfg.ExecutionsPerWorker)
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
