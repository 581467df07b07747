package worker

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// A worker's lineage: a worker is the child of the supervisor that
// started it, dies with it, and never starts workers itself.
//
// The supervisor starts each worker with one environment variable, its
// own pid (supervisorEnv), and a parent-death signal (SIGKILL). The
// worker checks at start that its parent is still that pid — a supervisor
// that died between fork and the signal's arming leaves an orphan the
// signal will never reach — and removes the variable, so that scripts see
// an empty environment. A process that carries the variable and reaches
// NewPool is a worker whose program did not call Main first: it ran the
// embedding program's main instead, and would start workers of its own,
// each of which would do the same. NewPool ends such a process at once,
// with a message that says what to fix.

// supervisorEnv names the environment variable that holds the pid of the
// supervisor that started a worker. It is outside ptcd's PTC_ namespace of
// configuration variables.
const supervisorEnv = "PTCWORKER_SUPERVISOR"

// startedBy is the value of supervisorEnv when this process started, and
// startedAsWorker whether it was started as a worker: with it and the
// worker argument. Both are read before main runs (Main removes the
// variable from the environment; the embedding program may change it, or
// os.Args).
var (
	startedBy       = os.Getenv(supervisorEnv)
	startedAsWorker = startedBy != "" && len(os.Args) == 2 && os.Args[1] == workerArg
)

// exitForgotMain is the exit status of a worker process whose program did
// not call Main first.
const exitForgotMain = 3

// errForgotMain is what such a process writes on stderr before it exits;
// the supervisor quotes it in its start-up error.
var errForgotMain = errors.New("this process was started as a ptc worker, but its program did not call " +
	"ptc.RunWorker (or worker.Main) first thing in main and went on to start workers itself; a worker never " +
	"starts workers, so it exits. Call ptc.RunWorker() at the top of main, and in TestMain of tests that start workers")

// refuseInWorker ends this process when it was started as a worker (see
// errForgotMain).
func refuseInWorker() {
	if !startedAsWorker {
		return
	}
	fmt.Fprintln(os.Stderr, "ptc:", errForgotMain)
	os.Exit(exitForgotMain)
}

// checkSupervisor arms the worker's parent-death signal and checks that
// its parent is still the supervisor that started it; it removes
// supervisorEnv from the environment.
func checkSupervisor() error {
	_ = os.Unsetenv(supervisorEnv)
	want, err := strconv.Atoi(startedBy)
	if err != nil || want <= 0 {
		return fmt.Errorf("started without its supervisor's pid in %s: worker processes are started by a worker.Pool", supervisorEnv)
	}
	// The supervisor arms the signal before exec; armed again here for an
	// executable the supervisor reaches through a wrapper.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("cannot arm the parent-death signal: %w", err)
	}
	if ppid := unix.Getppid(); ppid != want {
		return fmt.Errorf("its supervisor (pid %d) is not its parent (pid %d): it died, or the executable started the worker in a child process; a worker does not outlive its supervisor", want, ppid)
	}
	return nil
}

// starter starts a pool's worker processes from one OS thread that lives
// as long as the pool. Linux sends the parent-death signal when the thread
// that started a child ends, not the process: a worker started from a
// thread the Go runtime later ends (it ends the thread of a goroutine that
// exits locked to it) would be killed in the middle of its work.
type starter struct {
	reqs   chan startReq
	done   chan struct{}
	exited chan struct{}
}

// startReq asks the starter to start cmd; err receives the result.
type startReq struct {
	cmd *exec.Cmd
	err chan error
}

// newStarter starts the starter's goroutine; stop ends it.
func newStarter() *starter {
	s := &starter{reqs: make(chan startReq), done: make(chan struct{}), exited: make(chan struct{})}
	go s.run()
	return s
}

// run is the starter's goroutine, locked to its thread until stop. It
// returns still locked, so that the runtime ends the thread: a worker it
// started that is still alive then is killed by its parent-death signal.
func (s *starter) run() {
	defer close(s.exited)
	runtime.LockOSThread()
	for {
		select {
		case r := <-s.reqs:
			r.err <- r.cmd.Start()
		case <-s.done:
			return
		}
	}
}

// start starts cmd on the starter's thread; errPoolClosed after stop.
func (s *starter) start(cmd *exec.Cmd) error {
	r := startReq{cmd: cmd, err: make(chan error, 1)}
	select {
	case s.reqs <- r:
		return <-r.err
	case <-s.done:
		return errPoolClosed
	}
}

// stop ends the starter's goroutine and waits for it.
func (s *starter) stop() {
	close(s.done)
	<-s.exited
}
