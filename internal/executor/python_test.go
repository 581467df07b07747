package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/pyinterp"
	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// TestPythonOnlyWithConsent: with scripts in worker processes, a Python
// request (which would run in this process) is refused unless the
// operator allowed it; in-process executors run it.
func TestPythonOnlyWithConsent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    worker.Mode
		consent bool
		refused bool
	}{
		{"workers, no consent", worker.ModeWorker, false, true},
		{"in-process pool", worker.ModeInProcess, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "none.wasm")
			e := newExecutor(t, Config{Workers: &worker.Config{Mode: tc.mode, Workers: -1},
				Python: PythonConfig{Interpreter: missing, OnlyWithConsent: !tc.consent}})
			_, fe := e.Prepare(core.Request{Script: core.Script{Language: core.LanguagePython, Source: "return 1"}}, limits.Limits{})
			if fe == nil || fe.Code != fault.CodeFailedPrecondition {
				t.Fatalf("Prepare: %v, want FAILED_PRECONDITION", fe)
			}
			// Refused for running outside the sandbox, or else for the
			// missing interpreter: the consent check comes first.
			if got := strings.Contains(fe.Message, "python.in_supervisor"); got != tc.refused {
				t.Fatalf("Prepare: %v; refused for running outside workers: %v, want %v", fe, got, tc.refused)
			}
		})
	}
}

// TestPythonInterpreterRefused: a Python request on a server whose
// interpreter is missing or altered is refused with FAILED_PRECONDITION,
// naming the command that installs it; other languages still run.
func TestPythonInterpreterRefused(t *testing.T) {
	altered := filepath.Join(t.TempDir(), "python.wasm")
	if err := os.WriteFile(altered, []byte("not the interpreter"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  PythonConfig
		msg  string
	}{
		{name: "missing", cfg: PythonConfig{Interpreter: filepath.Join(t.TempDir(), "none.wasm")}, msg: pyinterp.InstallCommand},
		{name: "hash differs", cfg: PythonConfig{Interpreter: altered}, msg: "SHA-256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := New(Config{Python: c.cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			_, fe := e.Prepare(core.Request{Script: core.Script{Language: core.LanguagePython, Source: "return 1"}}, limits.Limits{})
			if fe == nil || fe.Code != fault.CodeFailedPrecondition || !strings.Contains(fe.Message, c.msg) {
				t.Fatalf("Prepare: %v, want FAILED_PRECONDITION naming %q", fe, c.msg)
			}
			if _, fe := e.Prepare(core.Request{Script: core.Script{Language: core.LanguageJavaScript, Source: "return 1"}}, limits.Limits{}); fe != nil {
				t.Fatalf("JavaScript refused too: %v", fe)
			}
		})
	}
}
