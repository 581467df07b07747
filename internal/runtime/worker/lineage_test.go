package worker

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestWorkerChecksSupervisor starts this test binary as a worker that
// was not started by a Pool: without the supervisor's pid, with a pid
// that is not its parent (a supervisor that died before the worker
// started), with garbage. The worker refuses at once, before it reads
// anything, with exit status 2 and a message that says why.
func TestWorkerChecksSupervisor(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"no supervisor", nil, "started without its supervisor's pid"},
		{"not the parent", []string{supervisorEnv + "=1"}, "supervisor (pid 1) is not its parent"},
		{"garbage", []string{supervisorEnv + "=x"}, "started without its supervisor's pid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], workerArg)
			cmd.Env = append([]string{}, tc.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit: %v, want status 2; stderr: %s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr %q does not say %q", stderr.String(), tc.want)
			}
		})
	}
}
