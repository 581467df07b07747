package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// entryArgs is how a journal keeps a call's arguments.
func entryArgs(args json.RawMessage) ([32]byte, json.RawMessage) {
	sum := sha256.Sum256(args)
	if len(args) <= core.MaxJournaledArgs {
		return sum, append(json.RawMessage(nil), args...)
	}
	return sum, nil
}

// describeArgs renders arguments for a divergence message.
func describeArgs(args json.RawMessage, sum [32]byte) string {
	const max = 200
	if args == nil {
		return fmt.Sprintf("arguments with SHA-256 %s…", hex.EncodeToString(sum[:8]))
	}
	if len(args) > max {
		return string(args[:max]) + "…"
	}
	return string(args)
}

// divergence is the failure of a re-run that did not do what the paused
// run did.
func divergence(seq int32, tool, format string, args ...any) *fault.Error {
	fe := fault.New(fault.KindDiverged, "the resumed execution diverged from the paused one at call #%d: %s; "+
		"a resumable script must make the same calls in the same order on every run (base them only on input and tool results)",
		seq, fmt.Sprintf(format, args...))
	fe.Tool = tool
	return fe
}

// callErrorOf converts a failure into the error a script sees.
func callErrorOf(name string, err error) *CallError {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce
	}
	var te *tools.Error
	if errors.As(err, &te) {
		return &CallError{Name: NameToolError, Tool: name, Code: te.Code, Message: te.Message}
	}
	return &CallError{Name: NameToolError, Tool: name, Code: tools.CodeToolFailed, Message: err.Error()}
}

// answerOutcome is what an answer gives the call it answers, for a client
// tool or a denied approval; approve reports that the tool runs now.
func answerOutcome(a *core.Action, ans core.Answer) (out json.RawMessage, err *CallError, approve bool) {
	switch {
	case ans.Approve:
		return nil, nil, true
	case ans.Deny:
		return nil, denied(a.Tool, ans.Reason), false
	case ans.Error != nil:
		code := ans.Error.Code
		if code == "" {
			code = tools.CodeToolFailed
		}
		return nil, &CallError{Name: NameToolError, Tool: a.Tool, Code: code, Message: ans.Error.Message}, false
	}
	out = ans.Output
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return out, nil, false
}

// failureOf converts a call error for a journal; nil stays nil.
func failureOf(ce *CallError) *core.CallFailure {
	if ce == nil {
		return nil
	}
	return &core.CallFailure{Name: ce.Name, Code: ce.Code, Message: ce.Message, Violations: ce.Errors, Limit: ce.Limit, Observed: ce.Observed}
}

// callErrorFrom converts a journaled failure back; nil stays nil.
func callErrorFrom(tool string, f *core.CallFailure) *CallError {
	if f == nil {
		return nil
	}
	return &CallError{Name: f.Name, Tool: tool, Code: f.Code, Message: f.Message, Errors: f.Violations, Limit: f.Limit, Observed: f.Observed}
}

// record finishes the trace record at idx with a journaled outcome, its
// timings as they were when the call first ran.
func (d *Dispatcher) record(idx int, e *core.JournalEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.Failure == nil {
		d.resultBytes += int64(len(e.Result))
	}
	if idx < 0 {
		return
	}
	rec := &d.trace[idx]
	rec.StartedAfter, rec.Duration = e.StartedAfter, e.Duration
	if e.Failure != nil {
		rec.ErrorCode, rec.ErrorMessage = e.Failure.Code, e.Failure.Message
		return
	}
	rec.OK = true
	rec.ResultBytes = int64(len(e.Result))
	if d.cfg.KeepResults {
		rec.Result = e.Result
	}
}

// timing returns the trace timings of the record at idx.
func (d *Dispatcher) timing(idx int) (startedAfter, duration time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if idx < 0 || idx >= len(d.trace) {
		return 0, 0
	}
	return d.trace[idx].StartedAfter, d.trace[idx].Duration
}
