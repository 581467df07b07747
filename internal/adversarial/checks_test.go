package adversarial

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// Checks on responses, combined with want.and.

// logsBounded: the logs a response carries cost no more than a small
// multiple of max_log_bytes, however many entries the script wrote, and
// the drop is marked.
func logsBounded(r *ptcv1.ExecuteResponse) error {
	max := r.GetEffectiveLimits().GetMaxLogBytes()
	size := int64(proto.Size(&ptcv1.ExecuteResponse{Logs: r.GetLogs()}))
	if size > 4*max+16<<10 {
		return fmt.Errorf("LOG CAP BYPASSED: %d log entries take %d bytes in the response, more than 4 × max_log_bytes (%d)", len(r.GetLogs()), size, max)
	}
	if !r.GetLogsTruncated() {
		return fmt.Errorf("logs were dropped but logs_truncated is not set (%d entries kept)", len(r.GetLogs()))
	}
	return nil
}

// toolCalls: stats.tool_calls and the trace count n calls, and the calls
// after the first ok ones were refused with code.
func toolCalls(n, ok int, code string) func(*ptcv1.ExecuteResponse) error {
	return toolCallsCheck(n, ok, code, false)
}

// toolCallsEnded is toolCalls for a script that ends at the first refusal
// (an uncaught rejection of Promise.all): calls within the budget that
// were still running then are cancelled with the execution, so each of
// them succeeded or failed with "cancelled".
func toolCallsEnded(n, budget int) func(*ptcv1.ExecuteResponse) error {
	return toolCallsCheck(n, budget, "tool_call_limit", true)
}

func toolCallsCheck(n, ok int, code string, cancelledWithin bool) func(*ptcv1.ExecuteResponse) error {
	return func(r *ptcv1.ExecuteResponse) error {
		if got := r.GetStats().GetToolCalls(); got != int32(n) {
			return fmt.Errorf("stats.tool_calls is %d, want %d (refused calls included)", got, n)
		}
		// The contract: every call is counted; past max_tool_calls at most
		// 64 refused calls are recorded in the trace.
		if want := ok + min(n-ok, maxRefusedRecords); code == "tool_call_limit" && len(r.GetTrace()) != want ||
			code != "tool_call_limit" && len(r.GetTrace()) != n {
			return fmt.Errorf("the trace holds %d records, want %d (refused calls included, at most %d past the budget)", len(r.GetTrace()), want, maxRefusedRecords)
		}
		okSeen, cancelled := 0, 0
		for _, rec := range r.GetTrace() {
			switch {
			case rec.GetOk():
				okSeen++
			case cancelledWithin && rec.GetErrorCode() == "cancelled" && int(rec.GetSeq()) <= ok:
				cancelled++
			case rec.GetErrorCode() != code:
				return fmt.Errorf("trace record %d failed with %q, want %q", rec.GetSeq(), rec.GetErrorCode(), code)
			}
		}
		if okSeen+cancelled != ok {
			return fmt.Errorf("%d calls succeeded, want %d", okSeen, ok)
		}
		return nil
	}
}

// maxRefusedRecords is the contract's bound on the trace records of calls
// refused past max_tool_calls.
const maxRefusedRecords = 64

// errorLimit: the breach reports the limit that was exceeded.
func errorLimit(limit int64) func(*ptcv1.ExecuteResponse) error {
	return func(r *ptcv1.ExecuteResponse) error {
		if got := r.GetError().GetLimit(); got != limit {
			return fmt.Errorf("error.limit is %d, want %d", got, limit)
		}
		if o := r.GetError().GetObserved(); o != 0 && o < limit {
			return fmt.Errorf("error.observed %d is below the limit %d", o, limit)
		}
		return nil
	}
}

// noGoSymbols: the result names nothing of ptc's Go implementation.
func noGoSymbols(r *ptcv1.ExecuteResponse) error {
	for _, leak := range []string{"github.com", ".go", "func(", "(*", "0x", "reflect", "goja", "ptcrun"} {
		if strings.Contains(r.GetResultJson(), leak) {
			return fmt.Errorf("GO SYMBOLS VISIBLE to the script (%q): %s", leak, clip(r.GetResultJson(), 400))
		}
	}
	return nil
}

// resultIs decodes the result into v and calls ok.
func resultIs[T any](ok func(T) error) func(*ptcv1.ExecuteResponse) error {
	return func(r *ptcv1.ExecuteResponse) error {
		var v T
		if err := json.Unmarshal([]byte(r.GetResultJson()), &v); err != nil {
			return fmt.Errorf("result %s: %v", clip(r.GetResultJson(), 200), err)
		}
		return ok(v)
	}
}

// noToolCalls: nothing reached a tool.
func noToolCalls(r *ptcv1.ExecuteResponse) error {
	for _, rec := range r.GetTrace() {
		if rec.GetOk() {
			return fmt.Errorf("a tool was called: %s(%s)", rec.GetTool(), clip(rec.GetArgumentsJson(), 100))
		}
	}
	return nil
}

// jsonUnmarshal decodes JSON text into v.
func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// protoUnmarshal decodes wire bytes into m.
func protoUnmarshal(b []byte, m proto.Message) error { return proto.Unmarshal(b, m) }
