package worker

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The life of a worker process, as one state machine. Every change of a
// worker's state — started, ready, taken, released, retired, stopped by
// the supervisor, found dead — is a transition of its lifecycle, which
// refuses the impossible ones (a dead worker taken again, a worker stopped
// twice) and records, for a stop, which decision of the supervisor's it
// was. Stats and the exit log read the state; nothing else decides whether
// a worker's end was a death:
//
//	starting ──► ready ◄──► busy ──► draining
//	   │           │          │          │
//	   └───────────┴──────────┴──────────┴──► killed (by the pool, with its cause)
//	                                      └──► died   (ended on its own)
//
// A worker is killed by the pool when the pool decides to end it (stop);
// it died when its process ended without such a decision. Both are final:
// a killed worker whose process is then reaped stays killed, so a death the
// pool caused itself is never counted as a crash.

// procState is where a worker process is in its life.
type procState uint8

const (
	// stateStarting: the process was started; the handshake is not done
	// or the pool has not taken it in yet.
	stateStarting procState = iota
	// stateReady: in the pool, idle.
	stateReady
	// stateBusy: running at least one execution.
	stateBusy
	// stateDraining: retired (after a breach, a kill-worthy outcome or its
	// quota): it finishes what it runs, takes nothing more and is stopped
	// once idle.
	stateDraining
	// stateKilled: the pool ended it (stopCause says why). Final.
	stateKilled
	// stateDied: its process ended without the pool ending it. Final.
	stateDied
	numStates
)

// String names the state for logs and test failures.
func (s procState) String() string {
	switch s {
	case stateStarting:
		return "starting"
	case stateReady:
		return "ready"
	case stateBusy:
		return "busy"
	case stateDraining:
		return "draining"
	case stateKilled:
		return "killed"
	case stateDied:
		return "died"
	}
	return fmt.Sprintf("procState(%d)", uint8(s))
}

// final reports whether a worker in s has ended (or is being ended).
func (s procState) final() bool { return s == stateKilled || s == stateDied }

// transitions[from] lists the states a worker in from may move to.
var transitions = [numStates][]procState{
	stateStarting: {stateReady, stateKilled, stateDied},
	stateReady:    {stateBusy, stateKilled, stateDied},
	stateBusy:     {stateReady, stateDraining, stateKilled, stateDied},
	stateDraining: {stateKilled, stateDied},
}

// allowed reports whether a worker may move from one state to another.
func allowed(from, to procState) bool {
	if from >= numStates {
		return false
	}
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// stopCause is which of the pool's decisions ended a worker (or, for
// stateDraining, retired it); it chooses the counter of Stats.
type stopCause uint8

const (
	// causeNone: no decision of the pool's (a death, or a move that is
	// not a stop).
	causeNone stopCause = iota
	// stopLimit: an execution overran its deadline or a limit, or was
	// cancelled (or a compile was), and did not stop: Stats.Killed.
	stopLimit
	// stopRecycle: retired after an outcome that leaves it unclean or
	// after its quota (draining): Stats.Recycled.
	stopRecycle
	// stopDrained: a draining worker stopped once idle (counted when it
	// was retired).
	stopDrained
	// stopIdle: idle beyond IdleTimeout: Stats.Shrunk.
	stopIdle
	// stopClosed: the pool was closed.
	stopClosed
	// stopBroken: it broke the frame protocol, or a frame could not be
	// written to it.
	stopBroken
)

// lifeCounts are the counters of Stats that transitions keep: each is
// added to by the one transition that defines it, and by nothing else.
type lifeCounts struct {
	started, died, recycled, killed, shrunk atomic.Int64
}

// count adds a transition into to, for cause, to its counter.
func (c *lifeCounts) count(to procState, cause stopCause) {
	switch {
	case to == stateDied:
		c.died.Add(1)
	case to == stateDraining && cause == stopRecycle:
		c.recycled.Add(1)
	case to == stateKilled && cause == stopLimit:
		c.killed.Add(1)
	case to == stateKilled && cause == stopIdle:
		c.shrunk.Add(1)
	}
}

// lifecycle is the state of one worker process. It is safe for concurrent
// use; its lock is taken last (under Pool.mu or proc.mu, never around
// them).
type lifecycle struct {
	mu     sync.Mutex
	state  procState
	cause  stopCause
	reason string
	counts *lifeCounts
}

// begin starts the lifecycle of a process just started, in stateStarting,
// counting it in counts.started; counts keeps the worker's transitions.
func (l *lifecycle) begin(counts *lifeCounts) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.state, l.counts = stateStarting, counts
	counts.started.Add(1)
}

// to moves the worker to state next for cause, with reason (for a stop,
// the words the exit log gives), and counts the move. It refuses an
// impossible move and returns false: the state stays as it is and the
// reason of the first stop is kept.
func (l *lifecycle) to(next procState, cause stopCause, reason string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !allowed(l.state, next) {
		return false
	}
	l.state = next
	if next == stateKilled || next == stateDraining {
		l.cause, l.reason = cause, reason
	}
	if l.counts != nil {
		l.counts.count(next, cause)
	}
	return true
}

// current returns the worker's state.
func (l *lifecycle) current() procState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// procEnd is how a worker ended: killed by the pool (with the cause and
// reason of the kill) or died.
type procEnd struct {
	state  procState
	cause  stopCause
	reason string
}

// died reports whether the worker ended without the pool ending it.
func (e procEnd) died() bool { return e.state == stateDied }

// ended is called once the worker's process is gone: a worker the pool
// did not kill died. It returns how the worker ended.
func (l *lifecycle) ended() procEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateKilled && allowed(l.state, stateDied) {
		l.state = stateDied
		if l.counts != nil {
			l.counts.count(stateDied, causeNone)
		}
	}
	e := procEnd{state: l.state}
	if l.state == stateKilled {
		e.cause, e.reason = l.cause, l.reason
	}
	return e
}

// The process behind a lifecycle has one way in and one way out, both
// here: start re-executes the binary (Config.Executable, the ptcd or
// program binary that calls Main, child.go) as a worker in its own
// process group; kill ends that process group. The pool decides an end
// through stop (or, under its own lock in scheduling.go, by moving the
// lifecycle to stateKilled before kill), so the lifecycle knows the end
// was the pool's before the process is gone; kill without such a move is
// for a worker already gone (its connection or a write to it failed),
// whose end is its own. Whatever ends the process, the reader
// (receive.go) reaps it and asks ended how it ended.

// start starts the worker process with only the supervisor's pid in its
// environment (the worker checks it and removes it, lineage.go), only its
// two pipe ends as extra descriptors (3 to read, 4 to write), its own
// process group, SIGKILL as its parent-death signal and, if netns, a
// private network namespace. The starter's thread starts it.
func (p *Pool) start(r, wr *os.File, netns bool) (*exec.Cmd, *head, error) {
	cmd := exec.Command(p.cfg.Executable, workerArg)
	cmd.Env = []string{supervisorEnv + "=" + strconv.Itoa(os.Getpid())}
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{r, wr}
	stderr := &head{max: stderrHead}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if netns {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	}
	if err := p.starter.start(cmd); err != nil {
		return nil, nil, err
	}
	return cmd, stderr, nil
}

// stop kills the worker for a decision of the supervisor's: it moves to
// stateKilled with cause and reason (the first stop's are kept, for Stats
// and the log) and its process is killed. Every kill the supervisor
// decides goes through stop, so that the worker's end is not a death;
// kill alone is for a worker already gone (its connection failed, a write
// to it failed), whose end is its own.
func (w *proc) stop(cause stopCause, reason string) {
	w.life.to(stateKilled, cause, reason)
	w.kill()
}

// kill ends the worker process (its whole process group). A proc whose
// process was never started has nothing to kill: kill(-0) would signal
// the supervisor's own process group.
func (w *proc) kill() {
	w.killOnce.Do(func() {
		if w.pid <= 0 {
			return
		}
		_ = unix.Kill(-w.pid, unix.SIGKILL)
		if w.cmd != nil && w.cmd.Process != nil {
			_ = w.cmd.Process.Kill()
		}
	})
}
