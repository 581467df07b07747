//go:build linux

package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkipReportReachesALogFile runs `go test ./... > log 2>&1` over the
// fixture package: the go command's output is a file opened without
// O_APPEND, and the skip line must be in it once, with the package's "ok"
// line intact after it.
func TestSkipReportReachesALogFile(t *testing.T) {
	// The fixture's go command is this test's child, as the go command
	// running this test is its parent: if the kernel lets this process
	// copy its parent's descriptor, it lets the fixture copy its own.
	if f, err := sharedDescriptor(os.Getppid(), 2); err != nil {
		t.Skipf("the kernel refuses pidfd_getfd here (%v): the line goes to the terminal instead", err)
	} else {
		f.Close()
	}
	const line = "github.com/ptcrun/ptc/internal/testenv/testdata/skipper: 2 tests skipped " +
		"(node_modules/.bin/ptc-testenv-never-installed is missing; run `npm ci` at the repository root): TestNeedsNode, TestAlsoNeedsNode"
	path := filepath.Join(t.TempDir(), "log")
	log, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", "./testdata/skipper")
	cmd.Env = append(os.Environ(), "CI=")
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	log.Close()
	out, rerr := os.ReadFile(path)
	if err != nil || rerr != nil {
		t.Fatalf("go test: %v %v\n%s", err, rerr, out)
	}
	if got := strings.Count(string(out), line+"\n"); got != 1 {
		t.Fatalf("the skip line appears %d times in the log, want once:\n%s", got, out)
	}
	if !strings.Contains(string(out), line+"\nok  \tgithub.com/ptcrun/ptc/internal/testenv/testdata/skipper\t") {
		t.Fatalf("the go command's ok line is not intact after the skip line:\n%s", out)
	}
}
