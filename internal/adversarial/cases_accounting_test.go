package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

func accountingCases() []tcase {
	a := func(name string, req *ptcv1.ExecuteRequest, w want, fast bool) tcase {
		return tcase{name: name, family: famAccounting, fast: fast, bound: 15 * time.Second, req: req, want: w}
	}
	return []tcase{
		a("acct-refused-awaited-caught", jsReq(`let ok = 0; for (let i = 0; i < 10; i++) { try { await tools.get_budget_by_level({level: "mid"}); ok++ } catch (e) { if (e.name !== "ToolCallLimitError") throw e } } return ok`, maxCalls(5)),
			succeeds("5").and(toolCalls(10, 5, "tool_call_limit")), true),
		a("acct-refused-uncaught", jsReq(`for (let i = 0; i < 10; i++) await tools.get_budget_by_level({level: "mid"}); return 1`, maxCalls(5)),
			fails(ToolCallLimit).and(errorLimit(5)).and(toolCalls(6, 5, "tool_call_limit")), false),
		a("acct-refused-all-settled", jsReq(`const r = await Promise.allSettled(Array.from({length: 12}, () => tools.get_budget_by_level({level: "mid"}))); return r.map((x) => x.status === "fulfilled" ? "ok" : x.reason.code).filter((c) => c === "tool_call_limit").length`, maxCalls(4)),
			succeeds("8").and(toolCalls(12, 4, "tool_call_limit")), false),
		a("acct-invalid-arguments-recorded", jsReq(`try { await tools.get_budget_by_level({level: "king"}) } catch (e) { return [e.name, e.code, e.errors.length > 0] }`),
			succeeds(`["ToolArgumentError","invalid_arguments",true]`).and(toolCalls(1, 0, "invalid_arguments")), false),
		a("acct-tool-error-recorded", jsReq(`try { await tools.get_expenses({member_id: "nobody", quarter: "Q1"}) } catch (e) { return [e.name, e.code, e.tool] }`),
			succeeds(`["ToolError","not_found","get_expenses"]`).and(toolCalls(1, 0, "not_found")), false),
		a("acct-result-bytes", jsReq(`await tools.get_team_members({department: "sales"}); await tools.get_budget_by_level({level: "staff"}); return 1`, withResults),
			succeeds("1").and(func(r *ptcv1.ExecuteResponse) error {
				var sum int64
				for _, rec := range r.GetTrace() {
					sum += rec.GetResultBytes()
					if int64(len(rec.GetResultJson())) != rec.GetResultBytes() || !json.Valid([]byte(rec.GetResultJson())) {
						return fmt.Errorf("trace %d: result_json of %d bytes, result_bytes %d", rec.GetSeq(), len(rec.GetResultJson()), rec.GetResultBytes())
					}
				}
				if sum != r.GetStats().GetToolResultBytes() || sum == 0 {
					return fmt.Errorf("trace result_bytes sum to %d, stats.tool_result_bytes %d", sum, r.GetStats().GetToolResultBytes())
				}
				return nil
			}), false),
		a("acct-big-arguments-summarised", jsReq(`try { await tools.get_team_members({department: "x".repeat(40000)}) } catch (e) { return e.code }`),
			succeeds(`"invalid_arguments"`).and(func(r *ptcv1.ExecuteResponse) error {
				if len(r.GetTrace()) != 1 {
					return fmt.Errorf("%d trace records", len(r.GetTrace()))
				}
				var s struct {
					Truncated bool   `json:"$truncated"`
					Bytes     int    `json:"bytes"`
					SHA256    string `json:"sha256"`
				}
				args := r.GetTrace()[0].GetArgumentsJson()
				if json.Unmarshal([]byte(args), &s) != nil || !s.Truncated || s.Bytes < 40000 || len(s.SHA256) != 64 {
					return fmt.Errorf("arguments over 16 KiB recorded as %s", clip(args, 120))
				}
				return nil
			}), false),
		// stats.log_bytes counts the text kept in logs (the contract);
		// logs_truncated says more was dropped.
		a("acct-log-bytes-kept", jsReq(`console.log("x".repeat(100000)); console.log("more"); return 1`, maxLogs(1024)),
			succeeds("1").and(func(r *ptcv1.ExecuteResponse) error {
				kept := 0
				for _, e := range r.GetLogs() {
					kept += len(e.GetMessage())
				}
				if r.GetStats().GetLogBytes() != int64(kept) || kept == 0 || kept > 1024 || !r.GetLogsTruncated() {
					return fmt.Errorf("stats.log_bytes %d, %d bytes in logs, logs_truncated %v", r.GetStats().GetLogBytes(), kept, r.GetLogsTruncated())
				}
				return nil
			}), false),
		a("acct-memory-limit-reported", jsReq(`let s = "x"; for (;;) s += s;`, tight),
			fails(MemoryLimit, ScriptError).and(rangeErrorIfScriptError).and(func(r *ptcv1.ExecuteResponse) error {
				if r.GetError().GetKind() == MemoryLimit {
					return errorLimit(64 * MiB)(r)
				}
				return nil
			}), false),
		a("acct-cpu-limit-reported", jsReq(`for (;;) {}`, timeout(10*time.Second), cpu(300*time.Millisecond)),
			fails(CPULimit).and(errorLimit(int64(300*time.Millisecond))), false),
		a("acct-timeout-reported", jsReq(`for (;;) {}`, timeout(500*time.Millisecond), cpu(10*time.Second)),
			fails(Timeout).and(errorLimit(int64(500*time.Millisecond))), false),
		a("acct-output-limit-reported", jsReq(`return "x".repeat(5000)`, maxOutput(1000)),
			fails(OutputLimit).and(errorLimit(1000)), false),
		a("acct-stats-measured", jsReq(`const t = Date.now(); while (Date.now() - t < 100) {} await tools.get_budget_by_level({level: "mid"}); return 1`),
			succeeds("1").and(func(r *ptcv1.ExecuteResponse) error {
				s := r.GetStats()
				if s.GetDuration().AsDuration() < 99*time.Millisecond || s.GetCpuTime().AsDuration() <= 0 || s.GetToolCalls() != 1 || s.GetPeakMemoryBytes() < 0 {
					return fmt.Errorf("stats %v", s)
				}
				// Date.now() counts whole milliseconds: 100 of them may be
				// 99.x ms apart.
				if rec := r.GetTrace()[0]; rec.GetStartedAfter().AsDuration() < 99*time.Millisecond || rec.GetTool() != "get_budget_by_level" || !rec.GetOk() {
					return fmt.Errorf("trace %v", rec)
				}
				return nil
			}), false),
		// On success model_message is the result JSON (the contract, the
		// README and the clients agree).
		a("acct-model-message-is-result-on-success", jsReq(`return {ok: true}`),
			succeeds(`{"ok":true}`).and(func(r *ptcv1.ExecuteResponse) error {
				if r.GetModelMessage() != r.GetResultJson() {
					return fmt.Errorf("model_message %q on success, result_json %q", r.GetModelMessage(), r.GetResultJson())
				}
				return nil
			}), false),
		a("acct-model-message-on-failure", jsReq("const x = 1;\nnull.boom"),
			fails(ScriptError).and(func(r *ptcv1.ExecuteResponse) error {
				if r.GetModelMessage() == "" || r.GetError().GetLine() != 2 {
					return fmt.Errorf("model_message %q, line %d", r.GetModelMessage(), r.GetError().GetLine())
				}
				return nil
			}), false),
		{
			name: "acct-absurd-limits-clamped", family: famAccounting, fast: true, bound: 10 * time.Second,
			req: jsReq(`return 1`, func(r *ptcv1.ExecuteRequest) {
				r.Limits = &ptcv1.Limits{MemoryBytes: 1 << 62, MaxToolCalls: 1<<31 - 1, MaxConcurrentToolCalls: 1<<31 - 1, MaxOutputBytes: 1 << 62, MaxLogBytes: 1 << 62}
				timeout(1 << 62)(r)
				cpu(1 << 62)(r)
			}),
			want: succeeds("1").and(func(r *ptcv1.ExecuteResponse) error {
				l := r.GetEffectiveLimits()
				want := fmt.Sprint(5*time.Minute, 2*time.Minute, 2<<30, 100000, 256, 16<<20, 4<<20)
				got := fmt.Sprint(l.GetTimeout().AsDuration(), l.GetCpuTime().AsDuration(), l.GetMemoryBytes(), l.GetMaxToolCalls(), l.GetMaxConcurrentToolCalls(), l.GetMaxOutputBytes(), l.GetMaxLogBytes())
				if got != want {
					return fmt.Errorf("effective limits %s, want the ceilings %s", got, want)
				}
				return nil
			}),
		},
		{
			name: "acct-defaults-apply", family: famAccounting, bound: 10 * time.Second,
			req: jsReq(`return 1`),
			want: succeeds("1").and(func(r *ptcv1.ExecuteResponse) error {
				l := r.GetEffectiveLimits()
				got := fmt.Sprint(l.GetTimeout().AsDuration(), l.GetCpuTime().AsDuration(), l.GetMemoryBytes(), l.GetMaxToolCalls(), l.GetMaxConcurrentToolCalls(), l.GetMaxOutputBytes(), l.GetMaxLogBytes())
				// testdata's configuration sets a 10s default timeout.
				if want := fmt.Sprint(10*time.Second, 10*time.Second, 256<<20, 1000, 16, 1<<20, 64<<10); got != want {
					return fmt.Errorf("effective limits %s, want the defaults %s", got, want)
				}
				return nil
			}),
		},
	}
}

// execIDCases abuse execution_id: only "at most 128 bytes of ASCII
// letters, digits and ._:-" is accepted, and it comes back unchanged.
func execIDCases() []tcase {
	bad := func(name, id string, fast bool) tcase {
		return tcase{name: name, family: famExecID, fast: fast, bound: 5 * time.Second,
			req: jsReq("return 1", execID(id)), want: refused(codes.InvalidArgument)}
	}
	good := func(name, id string, fast bool) tcase {
		return tcase{name: name, family: famExecID, fast: fast, bound: 5 * time.Second,
			req: jsReq("return 1", execID(id)), want: succeeds("1").and(func(r *ptcv1.ExecuteResponse) error {
				if r.GetExecutionId() != id {
					return fmt.Errorf("execution_id %q came back as %q", id, r.GetExecutionId())
				}
				return nil
			})}
	}
	cs := []tcase{
		bad("execid-path-traversal", "../../x", true),
		bad("execid-slash", "tenant/job", false),
		bad("execid-space", "a b", false),
		bad("execid-newline-log-injection", "x\n{\"level\":\"ERROR\",\"msg\":\"forged\"}", false),
		bad("execid-quote", `x","outcome":"ok`, false),
		bad("execid-percent-encoded", "%2e%2e%2fx", false),
		bad("execid-unicode", "caf\u00e9", false),
		bad("execid-nul", "a\x00b", false),
		bad("execid-backslash", `..\..\x`, false),
		bad("execid-too-long", strings.Repeat("a", 129), true),
		bad("execid-huge", strings.Repeat("a", 1<<20), false),
		good("execid-max-length", strings.Repeat("Z9", 64), false),
		good("execid-full-alphabet", "Aa0._:-zZ9", true),
		good("execid-dots-only", "..", false),
		{
			name: "execid-reused", family: famExecID, bound: 10 * time.Second,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				for i := 0; i < 3; i++ {
					r, err := e.c.Execute(ctx, jsReq("return 1", execID("same-id")))
					if err != nil || r.GetExecutionId() != "same-id" || r.GetResultJson() != "1" {
						e.fail("run %d with a reused id: %s", i, describe(r, err))
					}
				}
				return nil, nil
			},
			want: checkedByDo,
		},
		{
			name: "execid-generated", family: famExecID, bound: 10 * time.Second,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				seen := map[string]bool{}
				for i := 0; i < 20; i++ {
					r, err := e.c.Execute(ctx, jsReq("return 1"))
					if err != nil || !validExecutionID(r.GetExecutionId()) || seen[r.GetExecutionId()] {
						e.fail("generated id %q (%v)", r.GetExecutionId(), err)
					}
					seen[r.GetExecutionId()] = true
				}
				return nil, nil
			},
			want: checkedByDo,
		},
	}
	return cs
}
