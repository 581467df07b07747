package worker

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	wp "github.com/ptcrun/ptc/internal/workerproto"
	"github.com/ptcrun/ptc/tools"
)

// This file converts between the engine's Job and the worker frames, in
// both directions: every field a script can see has its own frame field.

// executeFrame is the Execute frame of job in slot.
func executeFrame(slot uint64, job *ptcruntime.Job) *wp.Execute {
	x := &wp.Execute{
		Slot:        slot,
		ExecutionId: job.ExecutionID,
		Language:    wp.Language(job.Language.Or(core.LanguageJavaScript)),
		Source:      job.Source,
		InputJson:   job.Input,
		Limits:      job.Limits.Values(),
		Logs:        job.Logs != nil,
		Resumable:   job.Idle != nil,
	}
	names := job.Tools.Names()
	x.Tools = make([]*wp.Tool, len(names))
	for i, n := range names {
		x.Tools[i] = &wp.Tool{Name: n, Inline: job.Tools.Inline(n)}
	}
	if job.Deterministic {
		x.Determinism = &wp.Determinism{Seed: job.Seed,
			ClockStartSeconds: job.ClockStart.Unix(), ClockStartNanos: int32(job.ClockStart.Nanosecond())}
	}
	return x
}

// jobOf is the Job of an Execute frame, without its tools and logs; an
// error means the frame is not one the worker can run.
func jobOf(m *wp.Execute) (*ptcruntime.Job, error) {
	lim, err := limits.FromValues(m.GetLimits())
	if err != nil {
		return nil, err
	}
	lang := core.Language(m.GetLanguage())
	switch lang {
	case core.LanguageJavaScript, core.LanguageTypeScript:
	case core.LanguageWASM:
		if m.GetModuleSha256() == "" {
			return nil, errors.New("a WebAssembly execution needs its module's SHA-256")
		}
	case core.LanguagePython:
		if m.GetModuleSha256() == "" {
			return nil, errNoPython
		}
	default:
		return nil, errors.New("workers run JavaScript, TypeScript, WebAssembly and Python only")
	}
	job := &ptcruntime.Job{
		ExecutionID:  m.GetExecutionId(),
		Language:     lang,
		Source:       m.GetSource(),
		ModuleSHA256: m.GetModuleSha256(),
		Input:        json.RawMessage(m.GetInputJson()),
		Limits:       lim,
	}
	if d := m.GetDeterminism(); d != nil {
		job.Determinism = core.Determinism{Deterministic: true, Seed: d.GetSeed(),
			ClockStart: time.Unix(d.GetClockStartSeconds(), int64(d.GetClockStartNanos())).UTC()}
	}
	return job, nil
}

// errorPB converts a classified failure for a Done or Breach frame.
func errorPB(fe *fault.Error) *wp.ExecutionError {
	if fe == nil {
		return nil
	}
	return &wp.ExecutionError{
		Kind:     wp.ErrorKind(fe.Kind),
		Message:  text(fe.Message),
		Line:     clamp32(fe.Line),
		Column:   clamp32(fe.Column),
		Stack:    text(fe.Stack),
		Tool:     text(fe.Tool),
		Limit:    fe.Limit,
		Observed: fe.Observed,
	}
}

// errorFromPB converts the failure of a Done or Breach frame. A kind outside
// the known set becomes INTERNAL: the worker is not trusted to invent kinds.
func errorFromPB(e *wp.ExecutionError) *fault.Error {
	if e == nil {
		return nil
	}
	k := fault.Kind(e.GetKind())
	if k <= fault.KindUnspecified || k > fault.KindInternal {
		return fault.New(fault.KindInternal, "the worker reported an unknown error kind %d", int32(k))
	}
	return &fault.Error{
		Kind:     k,
		Message:  e.GetMessage(),
		Line:     nonNegative(e.GetLine()),
		Column:   nonNegative(e.GetColumn()),
		Stack:    e.GetStack(),
		Tool:     e.GetTool(),
		Limit:    e.GetLimit(),
		Observed: e.GetObserved(),
	}
}

func nonNegative(v int32) int {
	if v < 0 {
		return 0
	}
	return int(v)
}

func clamp32(v int) int32 {
	const maxInt32 = 1<<31 - 1
	switch {
	case v > maxInt32:
		return maxInt32
	case v < -maxInt32:
		return -maxInt32
	}
	return int32(v)
}

// callErrorPB converts a failed tool call for a ToolReply frame. A tool's
// error text is the tool's (a remote server's, say) and need not be UTF-8,
// which a frame's strings must be.
func callErrorPB(err error) *wp.CallError {
	var ce *bridge.CallError
	if !errors.As(err, &ce) {
		ce = &bridge.CallError{Name: bridge.NameToolError, Code: tools.CodeToolFailed, Message: err.Error()}
	}
	out := &wp.CallError{Name: text(ce.Name), Tool: text(ce.Tool), Code: text(ce.Code), Message: text(ce.Message),
		Limit: ce.Limit, Observed: ce.Observed}
	for _, v := range ce.Errors {
		out.Violations = append(out.Violations, &wp.Violation{Path: text(v.Path), Keyword: text(v.Keyword), Message: text(v.Message)})
	}
	return out
}

// text returns s with each run of bytes that is not valid UTF-8 replaced
// by U+FFFD: every string field of a frame must be valid UTF-8, or the
// frame cannot be marshalled and the worker is lost with the execution.
func text(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// callErrorFromPB converts the failure of a ToolReply frame.
func callErrorFromPB(e *wp.CallError) *bridge.CallError {
	ce := &bridge.CallError{Name: e.GetName(), Tool: e.GetTool(), Code: e.GetCode(), Message: e.GetMessage(),
		Limit: e.GetLimit(), Observed: e.GetObserved()}
	for _, v := range e.GetViolations() {
		ce.Errors = append(ce.Errors, tools.Violation{Path: v.GetPath(), Keyword: v.GetKeyword(), Message: v.GetMessage()})
	}
	return ce
}

// validResult reports whether b is acceptable as a result from a worker.
func validResult(b []byte, maxBytes int64) bool {
	if maxBytes > 0 && int64(len(b)) > maxBytes {
		return false
	}
	return json.Valid(b)
}

// logLevel keeps a worker's log level within the known set.
func logLevel(l string) string {
	switch l {
	case "log", "info", "warn", "error", "debug":
		return l
	}
	return "log"
}

func nonNegativeDuration(ns int64) time.Duration {
	if ns < 0 {
		return 0
	}
	return time.Duration(ns)
}
