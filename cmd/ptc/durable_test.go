package main

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// TestRunResumableAndResume pauses the review example twice from the
// command line and resumes it from the pause files, in a worker process
// with the local key: a used pause file is refused. A pause made in a
// worker resumes with --inprocess, and the other way round.
func TestRunResumableAndResume(t *testing.T) {
	t.Setenv("PTC_HOME", t.TempDir())
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "p1.json"), filepath.Join(dir, "p2.json")
	code, stdout, stderr := ptcMain(t, "run", "../../examples/durable/review.js", "--resumable",
		"--client-tools", `[{"name":"ask_reviewer"},{"name":"notify_member"}]`, "--continuation", p1)
	if code != exitPaused {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var st ptcv1.ExecuteResponse
	if err := protojson.Unmarshal([]byte(stdout), &st); err != nil || st.GetState() != ptcv1.ExecutionState_EXECUTION_STATE_REQUIRES_ACTION ||
		len(st.GetPendingActions()) != 1 || st.GetPendingActions()[0].GetTool() != "ask_reviewer" {
		t.Fatalf("pause state: %v\n%s", err, stdout)
	}
	code, stdout, stderr = ptcMain(t, "resume", p1, "--answer", `c2={"member_id":"sal-04"}`, "--continuation", p2)
	if code != exitPaused || !strings.Contains(stdout, `"tool": "notify_member"`) || !strings.Contains(stderr, "Xavier Dubois") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = ptcMain(t, "resume", p2, "--error", "c5=bounced:the mailbox is full")
	if code != exitKindBase+2 || !strings.Contains(stderr, "uncaught ToolError from tool notify_member (code bounced)") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = ptcMain(t, "resume", p2, "--error", "c5=bounced:again")
	if code != exitRejected || !strings.Contains(stderr, "used already") {
		t.Fatalf("a used pause: exit %d\n%s", code, stderr)
	}
	// Approvals: all of them at once.
	code, stdout, _ = ptcMain(t, "run", "../../examples/expenses.js", "--resumable", "--require-approval", "get_budget_by_level", "--continuation", p1)
	if code != exitPaused {
		t.Fatalf("exit %d", code)
	}
	code, stdout, stderr = ptcMain(t, "resume", p1, "--approve", "all")
	if code != exitOK || !strings.Contains(stdout, `"over_by"`) {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, tc := range []struct{ run, resume []string }{
		{[]string{"run"}, []string{"resume", "--inprocess"}},
		{[]string{"run", "--inprocess"}, []string{"resume"}},
	} {
		code, _, stderr = ptcMain(t, append(tc.run, "../../examples/expenses.js", "--resumable", "--require-approval", "get_budget_by_level", "--continuation", p1)...)
		if code != exitPaused {
			t.Fatalf("%v: exit %d\n%s", tc.run, code, stderr)
		}
		code, stdout, stderr = ptcMain(t, append(tc.resume, p1, "--approve", "all")...)
		if code != exitOK || !strings.Contains(stdout, `"over_by"`) {
			t.Fatalf("%v after %v: exit %d\n%s%s", tc.resume, tc.run, code, stdout, stderr)
		}
	}
}

// TestPausePrintsLogsOnce: a paused run prints each console line once,
// whether it streamed it (in process) or not, and a resume that pauses
// again prints the lines of its own segment once.
func TestPausePrintsLogsOnce(t *testing.T) {
	t.Setenv("PTC_HOME", t.TempDir())
	dir := t.TempDir()
	p1 := filepath.Join(dir, "p1.json")
	script := writeScript(t, "twice.js", `
		console.log("first line");
		const a = await tools.ask({n: 1});
		console.log("second line");
		const b = await tools.ask({n: 2});
		return [a, b];`)
	code, stdout, stderr := ptcMain(t, "run", script, "--resumable", "--client-tools", `[{"name":"ask"}]`, "--continuation", p1)
	if code != exitPaused || strings.Count(stderr, "[log] first line") != 1 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = ptcMain(t, "resume", p1, "--answer", `c1=1`)
	// The resumed segment's logs are its own: the first line was printed
	// by the run that wrote it.
	if code != exitPaused || strings.Contains(stderr, "[log] first line") || strings.Count(stderr, "[log] second line") != 1 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestPauseStateIsProtoJSON: the pause state is the ExecuteResponse in
// protobuf's JSON mapping, as --json prints every response; ptc resume
// reads it from stdin, and a denied call rejects in the script.
func TestPauseStateIsProtoJSON(t *testing.T) {
	t.Setenv("PTC_HOME", t.TempDir())
	script := writeScript(t, "pay.js", `
		try { return await tools.get_budget_by_level({level: "senior"}); }
		catch (e) { return {code: e.code, message: e.message}; }`)
	code, pause, stderr := ptcMain(t, "run", script, "--resumable", "--require-approval", "get_budget_by_level")
	if code != exitPaused || !strings.Contains(stderr, "waiting for 1 call:") {
		t.Fatalf("exit %d\n%s%s", code, pause, stderr)
	}
	for _, want := range []string{`"executionId"`, `"state": "EXECUTION_STATE_REQUIRES_ACTION"`, `"pendingActions": [`,
		`"kind": "ACTION_KIND_APPROVAL"`, `"argumentsJson": "{\"level\":\"senior\"}"`, `"continuationExpireTime"`, `"effectiveLimits"`} {
		if !strings.Contains(pause, want) {
			t.Errorf("pause state without %s:\n%s", want, pause)
		}
	}
	var st ptcv1.ExecuteResponse
	if err := protojson.Unmarshal([]byte(pause), &st); err != nil || len(st.GetPendingActions()) != 1 {
		t.Fatalf("pause state: %v\n%s", err, pause)
	}
	id := st.GetPendingActions()[0].GetCallId()
	code, stdout, stderr := runCLI(t, pause, "resume", "-", "--deny", id+"=over the limit for this quarter", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	var done ptcv1.ExecuteResponse
	if err := protojson.Unmarshal([]byte(stdout), &done); err != nil || done.GetState() != ptcv1.ExecutionState_EXECUTION_STATE_COMPLETED ||
		done.GetResultJson() != `{"code":"denied","message":"over the limit for this quarter"}` {
		t.Fatalf("resumed: %v\n%s", err, stdout)
	}
}

// TestResumeApproveTakesABareID: --approve ID=VALUE (c1=false, c1=no,
// all=false) is refused before anything is sent, instead of approving
// the call while the value says otherwise; the pause stays usable.
func TestResumeApproveTakesABareID(t *testing.T) {
	t.Setenv("PTC_HOME", t.TempDir())
	script := writeScript(t, "pay.js", `
		try { await tools.get_budget_by_level({level: "senior"}); return "ran"; }
		catch (e) { return e.code; }`)
	code, pause, stderr := ptcMain(t, "run", script, "--resumable", "--require-approval", "get_budget_by_level")
	if code != exitPaused {
		t.Fatalf("exit %d\n%s%s", code, pause, stderr)
	}
	var st ptcv1.ExecuteResponse
	if err := protojson.Unmarshal([]byte(pause), &st); err != nil || len(st.GetPendingActions()) != 1 {
		t.Fatalf("pause state: %v\n%s", err, pause)
	}
	id := st.GetPendingActions()[0].GetCallId()
	for _, arg := range []string{id + "=false", id + "=no", "all=false", id + "="} {
		code, stdout, stderr := runCLI(t, pause, "resume", "-", "--approve", arg)
		if code != exitUsage || !strings.Contains(stderr, "give the call id alone") || stdout != "" {
			t.Fatalf("--approve %s: exit %d\n%s%s", arg, code, stdout, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, pause, "resume", "-", "--approve", id)
	if code != exitOK || strings.TrimSpace(stdout) != `"ran"` {
		t.Fatalf("--approve %s: exit %d\n%s%s", id, code, stdout, stderr)
	}
}
