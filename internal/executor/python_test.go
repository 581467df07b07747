package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/pyinterp"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/tools"
)

// TestPythonWhere: with scripts in worker processes, Python runs in the
// workers (this process only loads and verifies the interpreter, and never
// compiles or starts it), unless InProcess asks for this process; an
// in-process executor runs it here. A missing interpreter is refused
// before anything runs, in either mode.
func TestPythonWhere(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      worker.Mode
		inProcess bool
		isolation string
	}{
		{"workers", worker.ModeWorker, false, "worker"},
		{"workers, python in process", worker.ModeWorker, true, "inprocess"},
		{"in-process pool", worker.ModeInProcess, false, "inprocess"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "none.wasm")
			e := newExecutor(t, Config{Workers: &worker.Config{Mode: tc.mode, Workers: -1},
				Python: PythonConfig{Interpreter: missing, InProcess: tc.inProcess}})
			if got := e.isolation[core.LanguagePython]; got != tc.isolation {
				t.Errorf("isolation %q, want %q", got, tc.isolation)
			}
			_, fe := e.Prepare(core.Request{Script: core.Script{Language: core.LanguagePython, Source: "return 1"}}, limits.Limits{})
			if fe == nil || fe.Code != fault.CodeFailedPrecondition || !strings.Contains(fe.Message, pyinterp.InstallCommand) {
				t.Fatalf("Prepare: %v, want FAILED_PRECONDITION naming %q", fe, pyinterp.InstallCommand)
			}
		})
	}
}

// TestPythonInWorkerProcess: with the default worker mode a Python script
// runs, and calls a tool, without this process ever making the Python
// engine: the interpreter is compiled and started in the worker.
func TestPythonInWorkerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the Python interpreter")
	}
	if _, err := pyinterp.Load("", ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("no Python interpreter (npm ci installs it): %v", err)
	}
	e := newExecutor(t, Config{Workers: &worker.Config{Mode: worker.ModeWorker, Workers: 1}})
	if err := e.Registry().Register(tools.Tool{Definition: tools.Definition{Name: "double"},
		Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			var in struct{ N int }
			if err := json.Unmarshal(c.Arguments, &in); err != nil {
				return nil, err
			}
			return json.Marshal(in.N * 2)
		}}); err != nil {
		t.Fatal(err)
	}
	res, fe := e.Execute(context.Background(), core.Request{Script: core.Script{Language: core.LanguagePython,
		Source: "return await tools.double(n=21)"}}, limits.Limits{})
	if fe != nil || res.Error != nil || string(res.Result) != "42" {
		t.Fatalf("result %+v, %v", res, fe)
	}
	if got := e.isolation[core.LanguagePython]; got != "worker" {
		t.Errorf("isolation %q, want worker", got)
	}
	if e.python.eng != nil {
		t.Fatal("this process made the Python engine")
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
