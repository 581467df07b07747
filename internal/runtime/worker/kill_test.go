package worker

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// killChild names the environment variable that makes
// TestKillWithoutProcess run its check (in the child it starts).
const killChild = "PTC_TEST_KILL_WITHOUT_PROCESS"

// TestKillWithoutProcess: a proc whose process never started (the frame
// tests build such procs, and a breach frame arms the kill timer) kills
// nothing. kill(-0) would signal the caller's own process group: in ptcd
// its service group, in a test go test and the shell that runs it. The
// check runs in a child in a process group of its own, so that a failure
// kills only the child.
func TestKillWithoutProcess(t *testing.T) {
	if os.Getenv(killChild) != "" {
		w := &proc{pool: &Pool{cfg: Config{ExecutionsPerWorker: 1}}}
		w.stop(stopClosed, "a test")
		w.kill()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillWithoutProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChild+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the child that killed a proc without a process: %v\n%s", err, out)
	}
}
