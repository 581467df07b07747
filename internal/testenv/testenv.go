package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ModuleRoot returns the directory of the go.mod above the working
// directory (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// BuildCommand builds the main package in the working directory into a
// new temporary directory with `go build`, the way users build it, and
// returns the binary's path and a function that removes it. A command's
// TestMain calls it once; its tests then run the binary.
func BuildCommand() (bin string, cleanup func(), err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "ptc-cmd-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, filepath.Base(wd))
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build %s: %v\n%s", wd, err, out)
	}
	return bin, cleanup, nil
}

// skipped records the tests of this test binary that NodeBin skipped, by
// reason. It is the package's one piece of state: skips happen in tests,
// the report in TestMain.
var skipped struct {
	sync.Mutex
	tests   map[string][]string
	reasons []string
}

// NodeBin returns the absolute path of node_modules/.bin/name at the
// module root, where `npm ci` installs it. When it or node is missing the
// test fails under CI=true (CI installs them) and skips otherwise; the
// skip is recorded for SkipReport.
func NodeBin(t testing.TB, name string) string {
	t.Helper()
	return NodeModule(t, ".bin/"+name)
}

// NodeModule is NodeBin for any path below node_modules, such as a
// package's package.json.
func NodeModule(t testing.TB, rel string) string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "node_modules", filepath.FromSlash(rel))
	reason := ""
	if _, err := os.Stat(bin); err != nil {
		reason = "node_modules/" + rel + " is missing"
	} else if _, err := exec.LookPath("node"); err != nil {
		reason = "node is not on PATH"
	}
	if reason == "" {
		return bin
	}
	Missing(t, reason, "run `npm ci` at the repository root")
	return ""
}

// Missing ends t because something it needs from outside the module is
// missing: under CI=true (where .ci/run installs everything) it fails;
// otherwise it skips, saying what is missing and what installs it
// (reason "redis-server is not on PATH", fix "apt-get install
// redis-server"), and records the skip for SkipReport.
func Missing(t testing.TB, reason, fix string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %s", reason, fix)
	}
	why := reason + "; " + fix
	skipped.Lock()
	if skipped.tests == nil {
		skipped.tests = map[string][]string{}
	}
	if _, ok := skipped.tests[why]; !ok {
		skipped.reasons = append(skipped.reasons, why)
	}
	skipped.tests[why] = append(skipped.tests[why], t.Name())
	skipped.Unlock()
	t.Skipf("%s: %s to run this test", reason, fix)
}

// Runner is what a TestMain runs: *testing.M, and what SkipReport
// returns (goleak.VerifyTestMain accepts either).
type Runner interface{ Run() int }

// SkipReport wraps m: after the tests, it prints one line per reason
// naming the tests NodeBin (or Missing) skipped, e.g.
//
//	github.com/ptcrun/ptc/internal/tsdecl: 2 tests skipped (node_modules/.bin/tsc is missing; run `npm ci` at the repository root): TestA, TestB
//
// The line goes to standard output, where -v and a failing package show
// it. `go test ./...` discards the output of a passing package, so
// without -v the line also goes to the standard error of the go command
// that started the test binary: a terminal, a pipe, or a file such as the
// log of `go test ./... > log 2>&1` (see tellGoCommand).
func SkipReport(m Runner) Runner { return reporter{m} }

type reporter struct{ m Runner }

// Run runs the tests, then reports the skips.
func (r reporter) Run() int {
	code := r.m.Run()
	for _, line := range skipLines() {
		fmt.Println(line)
		if !testing.Verbose() {
			tellGoCommand(line)
		}
	}
	return code
}

// skipLines formats the recorded skips, one line per reason.
func skipLines() []string {
	skipped.Lock()
	defer skipped.Unlock()
	var out []string
	for _, reason := range skipped.reasons {
		tests := skipped.tests[reason]
		n := "1 test"
		if len(tests) != 1 {
			n = fmt.Sprintf("%d tests", len(tests))
		}
		out = append(out, fmt.Sprintf("%s: %s skipped (%s): %s",
			packagePath(), n, reason, strings.Join(tests, ", ")))
	}
	return out
}

// packagePath returns the import path of the package under test, from
// the module path and the working directory; the directory if that fails.
func packagePath() string {
	wd, _ := os.Getwd()
	root, err := ModuleRoot()
	if err != nil {
		return wd
	}
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return wd
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if mod, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			rel, err := filepath.Rel(root, wd)
			if err != nil || rel == "." {
				return mod
			}
			return mod + "/" + filepath.ToSlash(rel)
		}
	}
	return wd
}

// Then wraps m so that fn runs after the tests (goleak.VerifyTestMain
// exits without running a TestMain's deferred calls).
func Then(m Runner, fn func()) Runner { return then{m, fn} }

type then struct {
	m  Runner
	fn func()
}

// Run runs the tests, then fn.
func (t then) Run() int {
	defer t.fn()
	return t.m.Run()
}

// Run runs cmd, a built command prepared by a test (arguments, stdin,
// environment), and returns its exit code and output. A command that
// cannot be started fails the test; a non-zero exit is the code.
func Run(t testing.TB, cmd *exec.Cmd) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}
