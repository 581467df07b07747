package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/durable/redistest"
)

// ptcdProcess is a ptcd binary running in its own process.
type ptcdProcess struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

// startProcess starts the ptcd binary with a config file and extra
// environment, and waits until it logs its address.
func startProcess(t *testing.T, config string, env ...string) *ptcdProcess {
	t.Helper()
	return startProcessArgs(t, config, []string{"--listen", "127.0.0.1:0"}, env...)
}

// startProcessArgs is startProcess with the listen flags given.
func startProcessArgs(t *testing.T, config string, listen []string, env ...string) *ptcdProcess {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "ptcd.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--config", cfg}, listen...)
	args = append(args, "--metrics-listen", "", "--workers.mode", "inprocess", "--workers.insecure-inprocess")
	cmd := exec.Command(ptcdBin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &ptcdProcess{cmd: cmd, done: make(chan error, 1)}
	addr := make(chan string, 1)
	// The log reader ends when the process closes stderr (it exits).
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
			var rec struct{ Msg, Addr string }
			if !sent && json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "ptcd listening" {
				addr <- rec.Addr
				sent = true
			}
		}
		if !sent {
			addr <- ""
		}
		p.done <- errors.New(strings.Join(lines, "\n"))
	}()
	select {
	case p.addr = <-addr:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("ptcd did not start within 60s")
	}
	if p.addr == "" {
		_ = cmd.Wait()
		t.Fatalf("ptcd exited: %v", <-p.done)
	}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM and waits for the process to exit.
func (p *ptcdProcess) stop(t *testing.T) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("ptcd exited with %v: %v", err, <-p.done)
	}
}

func dialClient(t *testing.T, addr string) *ptc.Client {
	t.Helper()
	c, err := ptc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

const durableConfig = `
demo_tools: true
durable:
  keys:
    - id: k1
      secret_env: PTC_TEST_DURABLE_K1
`

var durableEnv = "PTC_TEST_DURABLE_K1=a secret of at least thirty-two bytes, for tests only"

// pauseExpenses runs the expense example resumably on c, the budget
// lookups needing approval: it pauses once, at those lookups together.
func pauseExpenses(t *testing.T, c *ptc.Client) (*ptc.Result, []ptc.Answer) {
	t.Helper()
	src, err := os.ReadFile("../../examples/expenses.js")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Execute(context.Background(), ptc.Request{Source: string(src), Resumable: true, RequireApproval: []string{"get_budget_by_level"}})
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
	return res, answers
}

func checkExpenses(t *testing.T, res *ptc.Result) {
	t.Helper()
	want, err := os.ReadFile("../../examples/expenses.expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	_ = json.Unmarshal(res.Result, &g)
	_ = json.Unmarshal(want, &w)
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if res.Error != nil || string(gb) != string(wb) || res.Stats.ToolCalls != 26 {
		t.Fatalf("result %s (%v), %d calls", res.Result, res.Error, res.Stats.ToolCalls)
	}
}

// TestResumeAfterRestart pauses an execution on one ptcd process, stops
// it, and resumes the execution on a second process that shares the key.
func TestResumeAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ptcd binaries")
	}
	first := startProcess(t, durableConfig, durableEnv)
	res, answers := pauseExpenses(t, dialClient(t, first.addr))
	first.stop(t)

	second := startProcess(t, durableConfig, durableEnv)
	c := dialClient(t, second.addr)
	out, err := c.Resume(context.Background(), res.Continuation, answers...)
	if err != nil {
		t.Fatal(err)
	}
	checkExpenses(t, out)
	// A retry gets the same outcome; other answers are refused.
	if again, err := c.Resume(context.Background(), res.Continuation, answers...); err != nil || string(again.Result) != string(out.Result) {
		t.Fatalf("a retry: %v", err)
	}
	denied := []ptc.Answer{{CallID: answers[0].CallID, Deny: true, Reason: "no"}}
	if _, err := c.Resume(context.Background(), res.Continuation, denied...); ptc.CodeOf(err) != ptc.FailedPrecondition {
		t.Fatalf("a used continuation: %v", err)
	}
	// Another key does not verify it.
	third := startProcess(t, strings.Replace(durableConfig, "k1", "k9", 1), durableEnv)
	if _, err := dialClient(t, third.addr).Resume(context.Background(), res.Continuation, answers...); ptc.CodeOf(err) != ptc.InvalidArgument {
		t.Fatalf("a foreign key: %v", err)
	}
}

// TestSharedStore runs two ptcd processes on one Redis server: a paused
// state too large for a token lives in Redis, a continuation used on one
// replica is refused on the other.
func TestSharedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ptcd binaries")
	}
	url := redistest.Start(t)
	cfg := durableConfig + `  max_token_bytes: 2KiB
  store:
    redis_url_env: PTC_TEST_REDIS
    redis_prefix: "ptcd-test:"
`
	a := startProcess(t, cfg, durableEnv, "PTC_TEST_REDIS="+url)
	b := startProcess(t, cfg, durableEnv, "PTC_TEST_REDIS="+url)
	res, answers := pauseExpenses(t, dialClient(t, a.addr))
	if len(res.Continuation) > 2048 {
		t.Fatalf("the continuation holds the state (%d bytes)", len(res.Continuation))
	}
	out, err := dialClient(t, b.addr).Resume(context.Background(), res.Continuation, answers...)
	if err != nil {
		t.Fatal(err)
	}
	checkExpenses(t, out)
	// A retry on the same replica returns once the outcome is kept in
	// Redis; a retry on the other replica then gets it too. Other answers
	// are refused there.
	if _, err := dialClient(t, b.addr).Resume(context.Background(), res.Continuation, answers...); err != nil {
		t.Fatalf("retried on the same replica: %v", err)
	}
	again, err := dialClient(t, a.addr).Resume(context.Background(), res.Continuation, answers...)
	if err != nil {
		t.Fatalf("retried on the other replica: %v", err)
	}
	checkExpenses(t, again)
	if again.ExecutionID != out.ExecutionID || string(again.Result) != string(out.Result) {
		t.Fatalf("the retry got another outcome: %s", again.Result)
	}
	other := append([]ptc.Answer(nil), answers...)
	other[0].Approve, other[0].Deny = !other[0].Approve, !other[0].Deny
	if _, err := dialClient(t, a.addr).Resume(context.Background(), res.Continuation, other...); ptc.CodeOf(err) != ptc.FailedPrecondition {
		t.Fatalf("used on the other replica, with other answers: %v", err)
	}
	// Without a store, such a state cannot pause.
	c := startProcess(t, durableConfig+"  max_token_bytes: 2KiB\n", durableEnv)
	src, _ := os.ReadFile("../../examples/expenses.js")
	res, err = dialClient(t, c.addr).Execute(context.Background(), ptc.Request{Source: string(src), Resumable: true, RequireApproval: []string{"get_budget_by_level"}})
	if err != nil || res.Error == nil || res.Error.Kind != ptc.KindPauseLimit || !strings.Contains(res.Error.Message, "state store") {
		t.Fatalf("no store: %v %+v", err, res.Error)
	}
}

// TestApprovalsSection: the approvals section of ptcd.yaml makes calls of
// the matching server tools wait for approval, with no request asking; a
// caller that cannot be asked has them denied.
func TestApprovalsSection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ptcd binaries")
	}
	p := startProcess(t, durableConfig+"approvals:\n  tools: [\"get_budget_*\"]\n", durableEnv)
	c := dialClient(t, p.addr)
	src, err := os.ReadFile("../../examples/expenses.js")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Execute(context.Background(), ptc.Request{Source: string(src), Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.RequiresAction() || len(res.Pending) < 2 {
		t.Fatalf("not paused at the budget lookups: %+v %v", res.Pending, res.Error)
	}
	for _, a := range res.Pending {
		if !a.Approval || a.Tool != "get_budget_by_level" || a.Reason == "" {
			t.Fatalf("pending %+v", a)
		}
	}
	// ListTools over gRPC tells in advance which calls need approval: the
	// tools the section matches, and only those; their declarations say so.
	l, err := c.ListTools(context.Background(), ptc.ToolQuery{TypeScript: true})
	if err != nil {
		t.Fatal(err)
	}
	gated := 0
	for _, d := range l.Tools {
		want := strings.HasPrefix(d.Name, "get_budget_")
		if d.RequiresApproval != want {
			t.Errorf("ListTools: %s requires_approval %v, want %v", d.Name, d.RequiresApproval, want)
		}
		if want {
			gated++
		}
	}
	if gated == 0 || !strings.Contains(l.TypeScript, "Each call waits for approval") {
		t.Fatalf("ListTools: %d gated tools; TypeScript:\n%s", gated, l.TypeScript)
	}
	// Not resumable, no callback: the lookups are denied, the script sees
	// ToolError code denied.
	res, err = c.Execute(context.Background(), ptc.Request{Source: `
		try { await tools.get_budget_by_level({level: "junior"}); return "ran"; }
		catch (e) { return e.code + ": " + e.message; }`})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Result); !strings.HasPrefix(got, `"denied: `) || !strings.Contains(got, "no way to ask") {
		t.Fatalf("unasked approval: %s %v", got, res.Error)
	}
}
