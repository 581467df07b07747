package ptc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

var testKeys = map[string][]byte{"k1": []byte("0123456789abcdef0123456789abcdef")}

// mailTool is a server tool with a side effect that needs approval; it
// counts its runs.
func mailTool(runs *atomic.Int64) tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{Name: "mail.send", Description: "Sends an email.", RequiresApproval: true,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`)},
		Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"sent":true}`), nil
		},
	}
}

func durableRunner(t *testing.T, runs *atomic.Int64, opts ...ptc.Option) *ptc.Runner {
	t.Helper()
	opts = append([]ptc.Option{ptc.WithTools(demo.Tools()...), ptc.WithTools(mailTool(runs)),
		ptc.WithDurable(ptc.Durable{Keys: testKeys, SigningKey: "k1"})}, opts...)
	r, err := ptc.NewRunner(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// The script asks its caller which member to look at (a client tool),
// reads their expenses, and mails a report — after approval.
const reviewJS = `
const team = await tools.get_team_members({department: "sales"});
const pick = await tools.ask_user({question: "Whose expenses?", options: team.map((m) => m.id)});
const items = await tools.get_expenses({member_id: pick.id, quarter: "Q1"});
const total = items.reduce((s, x) => s + Math.round(x.amount * 100), 0) / 100;
console.log("total", total);
let mailed;
try { mailed = (await tools.mail.send({to: pick.id})).sent; } catch (e) { mailed = e.code + ": " + e.message; }
return {id: pick.id, items: items.length, total, mailed};`

var askUser = tools.Tool{Definition: tools.Definition{Name: "ask_user",
	OutputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)}}

// pauseAndResume runs the review script to its end through two pauses on
// runner a, resuming the second on b.
func pauseAndResume(t *testing.T, a, b *ptc.Runner, lang ptc.Language, approve bool) *ptc.Result {
	t.Helper()
	ctx := context.Background()
	src := reviewJS
	if lang == ptc.LanguageTypeScript {
		src = strings.Replace(reviewJS, "let mailed;", "let mailed: boolean | string;", 1)
	}
	res, err := a.Execute(ctx, ptc.Request{Language: lang, Source: src, Resumable: true, ClientTools: []tools.Tool{askUser}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.RequiresAction() || len(res.Pending) != 1 || res.Pending[0].Tool != "ask_user" || res.Pending[0].Approval {
		t.Fatalf("first pause: %+v %v", res.Pending, res.Error)
	}
	res, err = a.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`{"id":"sal-01"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pending) != 1 || !res.Pending[0].Approval || res.Pending[0].Tool != "mail.send" || string(res.Pending[0].Arguments) != `{"to":"sal-01"}` {
		t.Fatalf("second pause: %+v %v", res.Pending, res.Error)
	}
	if len(res.Logs) != 1 || !strings.HasPrefix(res.Logs[0].Message, "total ") {
		t.Fatalf("logs of the second segment: %+v", res.Logs)
	}
	ans := ptc.Answer{CallID: res.Pending[0].CallID, Approve: true}
	if !approve {
		ans = ptc.Answer{CallID: res.Pending[0].CallID, Deny: true, Reason: "not during audits"}
	}
	res, err = b.Resume(ctx, res.Continuation, ans)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || res.RequiresAction() {
		t.Fatalf("end: %v %+v", res.Error, res.Pending)
	}
	if len(res.Logs) != 0 || len(res.Trace) != 4 || res.Stats.ToolCalls != 4 {
		t.Fatalf("end: logs %+v, trace %d", res.Logs, len(res.Trace))
	}
	return res
}

// TestResumableRunner pauses a script twice (a client tool, then an
// approval) in every language and isolation, resuming on the same runner
// (an execution parked in memory) and on another one that shares the key
// (a re-run): the approved tool runs once, a denied one never.
func TestResumableRunner(t *testing.T) {
	for _, lang := range []ptc.Language{ptc.LanguageJavaScript, ptc.LanguageTypeScript} {
		for _, iso := range []string{"in-process", "workers"} {
			t.Run(lang.String()+"/"+iso, func(t *testing.T) {
				var runs atomic.Int64
				var opts []ptc.Option
				if iso == "workers" {
					if testing.Short() {
						t.Skip("starts worker processes")
					}
					opts = append(opts, ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1}))
				}
				a, b := durableRunner(t, &runs, opts...), durableRunner(t, &runs, opts...)
				res := pauseAndResume(t, a, b, lang, true)
				if string(res.Result) != `{"id":"sal-01","items":35,"total":9887.14,"mailed":true}` || runs.Load() != 1 {
					t.Fatalf("approved: %s, ran %d times", res.Result, runs.Load())
				}
				res = pauseAndResume(t, a, a, lang, false)
				if string(res.Result) != `{"id":"sal-01","items":35,"total":9887.14,"mailed":"denied: not during audits"}` || runs.Load() != 1 {
					t.Fatalf("denied: %s, ran %d times", res.Result, runs.Load())
				}
			})
		}
	}
}

// TestResumableWASM pauses the Go expense guest at approvals: at its
// first call (one call) and at its budget lookups (a batch, which pauses
// as one).
func TestResumableWASM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go guest")
	}
	mod := buildGuest(t, "expenses")
	want, _ := os.ReadFile("examples/expenses.expected.json")
	var runs atomic.Int64
	a, b := durableRunner(t, &runs), durableRunner(t, &runs)
	ctx := context.Background()
	res, err := a.Execute(ctx, ptc.Request{Language: ptc.LanguageWASM, Module: mod, Resumable: true,
		RequireApproval: []string{"get_team_members", "get_budget_by_level"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pending) != 1 || res.Pending[0].Tool != "get_team_members" {
		t.Fatalf("first pause %+v %v", res.Pending, res.Error)
	}
	if _, err := b.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Approve: true}); !isReason(err, ptc.FailedPrecondition, "WASM_MODULE_MISSING") ||
		!strings.Contains(err.Error(), "module") {
		t.Fatalf("a runner without the module: %v", err)
	}
	if _, err := b.LoadModule(ctx, mod); err != nil {
		t.Fatal(err)
	}
	res, err = b.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Approve: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pending) < 2 {
		t.Fatalf("the budget lookups did not pause together: %+v %v", res.Pending, res.Error)
	}
	var answers []ptc.Answer
	for _, p := range res.Pending {
		if p.Tool != "get_budget_by_level" || !p.Approval {
			t.Fatalf("pending %+v", p)
		}
		answers = append(answers, ptc.Answer{CallID: p.CallID, Approve: true})
	}
	// Resumed where it paused (parked); a second time, with other
	// answers, it is refused (single use is remembered per runner without
	// a shared store).
	for i, r := range []*ptc.Runner{b, b} {
		if i == 1 {
			_, err := r.Resume(ctx, res.Continuation, ptc.Answer{CallID: answers[0].CallID, Deny: true})
			if !errors.Is(err, &ptc.Error{Code: ptc.FailedPrecondition}) {
				t.Fatalf("a used continuation resumed: %v", err)
			}
			break
		}
		out, err := r.Resume(ctx, res.Continuation, answers...)
		if err != nil || out.Error != nil {
			t.Fatal(err, out.Error)
		}
		jsonEqual(t, out.Result, want)
		if out.Stats.ToolCalls != 26 {
			t.Fatalf("tool calls %d", out.Stats.ToolCalls)
		}
	}
}

// TestApproveCallback decides approvals in the Go API while the script
// runs (no pause). A callback that panics denies the call, and the
// panic's text stays out of what the script sees.
func TestApproveCallback(t *testing.T) {
	var runs atomic.Int64
	r := durableRunner(t, &runs)
	src := `try { return await tools.mail.send({to: "x"}); } catch (e) { return e.code + ": " + e.message; }`
	cases := []struct {
		name    string
		approve func(context.Context, ptc.Action) (bool, string)
		want    string
		runs    int64
	}{
		{"approved", func(_ context.Context, a ptc.Action) (bool, string) { return a.Approval && a.Tool == "mail.send", "" }, `{"sent":true}`, 1},
		{"denied", func(context.Context, ptc.Action) (bool, string) { return false, "no mail today" }, `"denied: no mail today"`, 0},
		{"no callback", nil, `"denied: mail.send needs approval`, 0},
		{"panics", func(context.Context, ptc.Action) (bool, string) { panic("approve") }, `"denied: the approval callback failed unexpectedly; the call is denied"`, 0},
		{"panics with a runtime error", func(context.Context, ptc.Action) (bool, string) {
			var m map[string]bool
			m["x"] = true
			return true, ""
		}, `"denied: the approval callback failed unexpectedly; the call is denied"`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runs.Store(0)
			res, err := r.Execute(context.Background(), ptc.Request{Source: src, Approve: tc.approve})
			succeeded(t, res, err)
			if !strings.HasPrefix(string(res.Result), tc.want) || runs.Load() != tc.runs {
				t.Fatalf("%s, ran %d times", res.Result, runs.Load())
			}
		})
	}
}

// TestResumeAnswerShapes: an answer to an approval in Runner.Resume must
// be exactly one of approve and deny; an answer with none, or with more
// than one outcome, is refused and nothing runs.
func TestResumeAnswerShapes(t *testing.T) {
	var runs atomic.Int64
	r := durableRunner(t, &runs)
	ctx := context.Background()
	res, err := r.Execute(ctx, ptc.Request{Source: `return await tools.mail.send({to: "x"})`, Resumable: true})
	if err != nil || len(res.Pending) != 1 {
		t.Fatal(err, res)
	}
	id := res.Pending[0].CallID
	cases := []struct {
		name string
		a    ptc.Answer
	}{
		{"empty", ptc.Answer{CallID: id}},
		{"a reason only", ptc.Answer{CallID: id, Reason: "yes"}},
		{"approve and deny", ptc.Answer{CallID: id, Approve: true, Deny: true}},
		{"approve and an output", ptc.Answer{CallID: id, Approve: true, Output: json.RawMessage(`true`)}},
		{"approve and an error", ptc.Answer{CallID: id, Approve: true, Error: &tools.Error{Code: "x"}}},
		{"an output", ptc.Answer{CallID: id, Output: json.RawMessage(`true`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.Resume(ctx, res.Continuation, tc.a); !isReason(err, ptc.InvalidArgument, "ANSWERS_INVALID") || runs.Load() != 0 {
				t.Fatalf("%v, ran %d times", err, runs.Load())
			}
		})
	}
	// More answers than any pause waits for are refused before they are
	// compared with anything.
	t.Run("too many", func(t *testing.T) {
		many := make([]ptc.Answer, 4097)
		for i := range many {
			many[i] = ptc.Answer{CallID: fmt.Sprintf("c%d", i), Approve: true}
		}
		if _, err := r.Resume(ctx, res.Continuation, many...); !isReason(err, ptc.InvalidArgument, "ANSWERS_INVALID") ||
			!strings.Contains(err.Error(), "4097 answers") || runs.Load() != 0 {
			t.Fatalf("%v, ran %d times", err, runs.Load())
		}
	})
}

// TestContinuationsRefused: altered, foreign, expired-by-key, used and
// malformed continuations are refused and nothing runs.
func TestContinuationsRefused(t *testing.T) {
	var runs atomic.Int64
	a := durableRunner(t, &runs)
	other, err := ptc.NewRunner(ptc.WithTools(mailTool(&runs)),
		ptc.WithDurable(ptc.Durable{Keys: map[string][]byte{"k2": []byte("another secret of thirty-two bytes!")}, SigningKey: "k2"}))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	res, err := a.Execute(ctx, ptc.Request{Source: `return await tools.mail.send({to: "x"})`, Resumable: true})
	if err != nil || len(res.Pending) != 1 {
		t.Fatal(err, res)
	}
	ok := ptc.Answer{CallID: res.Pending[0].CallID, Approve: true}
	tok := res.Continuation
	// One character of the middle changed to another of base64url's
	// alphabet: the token still decodes, its bytes no longer verify.
	flip := []byte(tok)
	if flip[len(flip)/2] == 'A' {
		flip[len(flip)/2] = 'B'
	} else {
		flip[len(flip)/2] = 'A'
	}
	cases := []struct {
		name   string
		runner *ptc.Runner
		tok    string
		code   ptc.Code
		msg    string
		reason string
	}{
		{"altered", a, string(flip), ptc.InvalidArgument, "continuation", "CONTINUATION_TAMPERED"},
		{"foreign key", other, tok, ptc.InvalidArgument, `signed with key "k1"`, "CONTINUATION_UNKNOWN_KEY"},
		{"malformed", a, "not a continuation!", ptc.InvalidArgument, "malformed", "CONTINUATION_MALFORMED"},
		{"truncated", a, tok[:len(tok)/2], ptc.InvalidArgument, "continuation", ""}, // malformed or tampered, by where the cut falls
		{"empty", a, "", ptc.InvalidArgument, "empty", "CONTINUATION_MALFORMED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.runner.Resume(ctx, tc.tok, ok)
			var pe *ptc.Error
			if !errors.As(err, &pe) || pe.Code != tc.code || !strings.Contains(pe.Message, tc.msg) || pe.Reason == "" || tc.reason != "" && pe.Reason != tc.reason {
				t.Fatalf("got %v (reason %q), want %s with %q (reason %q)", err, pe.Reason, tc.code, tc.msg, tc.reason)
			}
		})
	}
	if _, err := a.Resume(ctx, tok, ptc.Answer{CallID: "c9", Approve: true}); !isReason(err, ptc.InvalidArgument, "ANSWERS_INVALID") {
		t.Fatalf("unknown call id: %v", err)
	}
	if runs.Load() != 0 {
		t.Fatalf("a refused continuation ran the tool %d times", runs.Load())
	}
	if out, err := a.Resume(ctx, tok, ok); err != nil || string(out.Result) != `{"sent":true}` {
		t.Fatal(err, out)
	}
	// A retry gets the same outcome; other answers are refused; the tool
	// ran once.
	if out, err := a.Resume(ctx, tok, ok); err != nil || string(out.Result) != `{"sent":true}` {
		t.Fatalf("retry: %v %v", err, out)
	}
	denied := ptc.Answer{CallID: ok.CallID, Deny: true, Reason: "no"}
	if _, err := a.Resume(ctx, tok, denied); !isReason(err, ptc.FailedPrecondition, "CONTINUATION_USED") || runs.Load() != 1 {
		t.Fatalf("used: %v, ran %d times", err, runs.Load())
	}
}

// isReason reports whether err is a request error with code and reason.
func isReason(err error, code ptc.Code, reason string) bool {
	var pe *ptc.Error
	return errors.As(err, &pe) && pe.Code == code && pe.Reason == reason
}
