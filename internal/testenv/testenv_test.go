package testenv

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestSkipReportReachesGoTest runs `go test` over a fixture package whose
// tests need a program that is never installed, as `go test ./...` would
// (a package list: the output of a passing package is discarded), and
// requires the skip line in what the go command printed.
func TestSkipReportReachesGoTest(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the report reaches the go command through /proc")
	}
	const line = "github.com/ptcrun/ptc/internal/testenv/testdata/skipper: 2 tests skipped " +
		"(node_modules/.bin/ptc-testenv-never-installed is missing; run `npm ci` at the repository root): TestNeedsNode, TestAlsoNeedsNode"
	cases := []struct {
		name  string
		flags []string
	}{
		{"package list hides passing output", nil},
		{"verbose shows it once", []string{"-v"}},
		{"json carries it once", []string{"-json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"test", "-count=1"}, tc.flags...)
			cmd := exec.Command("go", append(args, "./testdata/skipper")...)
			cmd.Env = append(os.Environ(), "CI=")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go test: %v\n%s", err, out)
			}
			if got := strings.Count(string(out), line); got != 1 {
				t.Fatalf("the skip line appears %d times, want once:\n%s", got, out)
			}
		})
	}
}

// TestNodeBinFailsUnderCI checks that CI, which installs node_modules,
// fails a test whose program is missing instead of skipping it.
func TestNodeBinFailsUnderCI(t *testing.T) {
	cmd := exec.Command("go", "test", "-count=1", "-run", "TestNeedsNode$", "./testdata/skipper")
	cmd.Env = append(os.Environ(), "CI=true")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ptc-testenv-never-installed is missing: run `npm ci` at the repository root") {
		t.Fatalf("want a failure naming the missing program, got %v:\n%s", err, out)
	}
}
