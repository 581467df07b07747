package ipc

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// childArg marks a re-executed test binary as a child process; the next
// argument names what the child runs (see children).
const childArg = "ptc-ipc-child"

// children are the programs a re-executed test binary can run, by name.
// Each gets its descriptors from 3 on and returns an exit code.
var children = map[string]func() int{
	"echo":                   childEcho,
	"echo-socket":            childEchoSocket,
	"echo-queued":            childEchoQueued,
	"echo-mailbox":           func() int { return childEchoMailbox(Options{}) },
	"echo-mailbox-nospin":    func() int { return childEchoMailbox(Options{SpinBudget: -1}) },
	"echo-mailbox-noprobe":   func() int { return childEchoMailbox(Options{loadavg: "-"}) },
	"wait":                   childWait,
	"caller":                 childCaller,
	"netpoller-answer":       childNetpollerAnswer,
	"floor-socket-blocking":  floorSocketBlocking,
	"floor-socket-netpoller": floorSocketNetpoller,
	"floor-pipe-blocking":    floorPipeBlocking,
	"floor-futex-sleep":      func() int { return floorFutex(false) },
	"floor-futex-spin":       func() int { return floorFutex(true) },
	"floor-pipe-poll":        floorPipePoll,
}

// TestMain doubles as the entry point of the child processes that the
// tests and benchmarks start, as the worker pool re-executes its binary.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == childArg {
		run, ok := children[os.Args[2]]
		if !ok {
			fmt.Fprintf(os.Stderr, "ipc child: unknown program %q\n", os.Args[2])
			os.Exit(2)
		}
		os.Exit(run())
	}
	goleak.VerifyTestMain(m)
}

// child is a started child process of the test binary.
type child struct {
	cmd *exec.Cmd
}

// startChild re-executes the test binary as child program name, with
// files as its descriptors 3, 4, …; the parent's copies are closed. The
// child is killed and reaped at the end of the test.
func startChild(tb testing.TB, name string, files ...*os.File) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], childArg, name)
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	for _, f := range files {
		_ = f.Close()
	}
	c := &child{cmd: cmd}
	tb.Cleanup(func() { c.kill() })
	return c
}

// kill kills the child and reaps it; calling it again does nothing.
func (c *child) kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// wait reaps a child expected to exit by itself.
func (c *child) wait() error { return c.cmd.Wait() }

// socketpair returns a connected pair of blocking stream sockets with
// close-on-exec set: the first for the parent (a raw descriptor), the
// second as a file for the child.
func socketpair(tb testing.TB) (int, *os.File) {
	tb.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return fds[0], os.NewFile(uintptr(fds[1]), "ipc-child-socket")
}
