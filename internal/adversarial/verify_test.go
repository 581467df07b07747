package adversarial

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// verify compares an answer with w, and checks the invariants every
// response must hold.
func (w want) verify(res *ptcv1.ExecuteResponse, err error) []string {
	got := describe(res, err)
	if w.custom {
		if err != nil || res != nil {
			return []string{"unexpected answer: " + got}
		}
		return nil
	}
	if err != nil && w.orCode != codes.OK && status.Code(err) == w.orCode {
		return nil
	}
	if w.code != codes.OK {
		if status.Code(err) != w.code {
			return []string{fmt.Sprintf("want gRPC status %v, got %s", w.code, got)}
		}
		return nil
	}
	if err != nil {
		return []string{fmt.Sprintf("want a response, got %s", got)}
	}
	var problems []string
	if e := res.GetError(); e == nil {
		switch {
		case !w.ok:
			problems = append(problems, fmt.Sprintf("want error kind %s, got %s", kindList(w.kinds), got))
		case len(w.results) > 0 && !slices.Contains(w.results, compact(res.GetResultJson())):
			problems = append(problems, fmt.Sprintf("want result %s, got %s", strings.Join(w.results, " or "), got))
		}
	} else if !slices.Contains(w.kinds, e.GetKind()) {
		wanted := kindList(w.kinds)
		if w.ok {
			wanted = "success"
			if len(w.results) > 0 {
				wanted += " with " + strings.Join(w.results, " or ")
			}
			if len(w.kinds) > 0 {
				wanted += " or " + kindList(w.kinds)
			}
		}
		problems = append(problems, fmt.Sprintf("want %s, got %s", wanted, got))
	}
	if len(problems) == 0 && w.check != nil {
		if err := w.check(res); err != nil {
			problems = append(problems, err.Error()+" (response: "+got+")")
		}
	}
	return append(problems, invariants(res)...)
}

// invariants are what every ExecuteResponse must hold, whatever the
// script did.
func invariants(res *ptcv1.ExecuteResponse) []string {
	var p []string
	if !validExecutionID(res.GetExecutionId()) {
		p = append(p, fmt.Sprintf("execution_id %q breaks the contract's alphabet", clip(res.GetExecutionId(), 200)))
	}
	if e := res.GetError(); e != nil {
		if e.GetKind() == ptcv1.ErrorKind_ERROR_KIND_UNSPECIFIED {
			p = append(p, "an error with kind UNSPECIFIED")
		}
		if res.GetResultJson() != "" {
			p = append(p, "a failed execution with a result_json")
		}
		for _, leak := range goInternals {
			if strings.Contains(res.GetModelMessage(), leak) {
				p = append(p, fmt.Sprintf("model_message shows ptc's internals (%q): %s", leak, clip(res.GetModelMessage(), 300)))
			}
			if strings.Contains(e.GetStack(), leak) {
				p = append(p, fmt.Sprintf("error.stack shows ptc's own stack (%q): %s", leak, clip(e.GetStack(), 300)))
			}
		}
	} else {
		if !json.Valid([]byte(res.GetResultJson())) {
			p = append(p, fmt.Sprintf("result_json is not JSON: %s", clip(res.GetResultJson(), 200)))
		}
		if got := res.GetStats().GetOutputBytes(); got != int64(len(res.GetResultJson())) {
			p = append(p, fmt.Sprintf("stats.output_bytes %d, but result_json holds %d bytes", got, len(res.GetResultJson())))
		}
	}
	l := res.GetEffectiveLimits()
	if l.GetTimeout().AsDuration() <= 0 || l.GetCpuTime().AsDuration() <= 0 || l.GetMemoryBytes() <= 0 || l.GetMaxToolCalls() <= 0 ||
		l.GetMaxConcurrentToolCalls() <= 0 || l.GetMaxOutputBytes() <= 0 || l.GetMaxLogBytes() <= 0 {
		p = append(p, fmt.Sprintf("effective_limits not fully set: %v", l))
	}
	var logBytes int64
	for _, e := range res.GetLogs() {
		logBytes += int64(len(e.GetMessage()))
	}
	if max := l.GetMaxLogBytes(); max > 0 && logBytes > max {
		p = append(p, fmt.Sprintf("logs hold %d bytes, more than max_log_bytes %d", logBytes, max))
	}
	if max := l.GetMaxOutputBytes(); max > 0 && int64(len(res.GetResultJson())) > max {
		p = append(p, fmt.Sprintf("result_json holds %d bytes, more than max_output_bytes %d", len(res.GetResultJson()), max))
	}
	for i, r := range res.GetTrace() {
		if r.GetSeq() != int32(i+1) {
			p = append(p, fmt.Sprintf("trace[%d] has seq %d", i, r.GetSeq()))
			break
		}
	}
	return p
}

// goInternals are strings that betray ptc's Go implementation.
var goInternals = []string{"goroutine ", ".go:", "github.com/", "runtime/debug", "/usr/local/go"}

// validExecutionID is the contract's rule for execution ids.
func validExecutionID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r)) {
			return false
		}
	}
	return true
}

// describe summarises an answer for a failure message.
func describe(res *ptcv1.ExecuteResponse, err error) string {
	if err != nil {
		st := status.Convert(err)
		return fmt.Sprintf("gRPC %v: %s", st.Code(), clip(st.Message(), 300))
	}
	return brief(res)
}

// brief summarises a response.
func brief(res *ptcv1.ExecuteResponse) string {
	if res == nil {
		return "no response"
	}
	if e := res.GetError(); e != nil {
		return fmt.Sprintf("%v: %s (%d logs, %d trace records, %d tool calls)", e.GetKind(), clip(e.GetMessage(), 300),
			len(res.GetLogs()), len(res.GetTrace()), res.GetStats().GetToolCalls())
	}
	return fmt.Sprintf("result %s (%d logs, %d trace records, %d tool calls)", clip(res.GetResultJson(), 300),
		len(res.GetLogs()), len(res.GetTrace()), res.GetStats().GetToolCalls())
}

func kindList(ks []ptcv1.ErrorKind) string {
	var s []string
	for _, k := range ks {
		s = append(s, strings.TrimPrefix(k.String(), "ERROR_KIND_"))
	}
	return strings.Join(s, " or ")
}

// clip shortens s for messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// compact returns JSON text without insignificant space.
func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}
