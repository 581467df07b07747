package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/jsonval"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// MaxReasonBytes bounds the reason of a denial.
const MaxReasonBytes = 4 << 10

// CutReason shortens a denial's reason to at most MaxReasonBytes, on a
// character boundary, ending it with "…" to show it was cut (as the
// clients do); a reason within the bound is returned as it is.
func CutReason(s string) string {
	if len(s) <= MaxReasonBytes {
		return s
	}
	const mark = "…"
	n := MaxReasonBytes - len(mark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

// resumed is a paused execution being resumed.
type resumed struct {
	opened  *durable.Opened
	journal core.Journal
	answers map[int32]core.Answer
	// usage is what the execution used, its paused time brought up to
	// the resume.
	usage durable.Usage
	// parked is the execution kept in memory, if this server holds it.
	parked bool
	// lastSeq is the seq of the last call the execution made before it
	// paused; the pending calls (answers) are among them.
	lastSeq int32
	// digest is the SHA-256 of the answers' canonical encoding; used is
	// the continuation's recorded use when it was used already (a retry,
	// or a resume with other answers: nothing runs again).
	digest [32]byte
	used   *durable.Use
	// takeover is the recorded use of a resume whose replica stopped
	// renewing its lease, when this one is a retry with the same answers
	// that may take it over (see StartResume): prepared to run again.
	takeover *durable.Use
}

// Resume is a request to resume a paused execution.
type Resume struct {
	// Continuation is the token the pause returned.
	Continuation string
	// Answers answer every pending call.
	Answers []core.Answer
	// Tenant is the caller's tenant (the continuation's must match);
	// Ceilings its limit ceilings.
	Tenant   string
	Ceilings limits.Limits
	// Module is the WebAssembly module, when this server does not hold
	// the paused execution's module any more.
	Module []byte
}

// MaxAnswers bounds the answers of one resume: a paused execution waits
// for at most its concurrent tool calls (256 at most) and its approvals.
const MaxAnswers = 4096

// PrepareResume checks a resume once: the continuation (signature,
// expiry, tenant), the answers (one per pending call, each of the right
// kind, outputs valid against the client tool's output schema), and the
// request it re-runs. Nothing runs and the continuation is not used up:
// StartResume (or Continue) does that, after admission. A continuation
// used already is prepared as a retry (Prepared.Retry): its answers are
// compared with the ones it was used with, not checked again.
func (e *Executor) PrepareResume(ctx context.Context, r Resume) (*Prepared, *fault.Error) {
	if e.durable == nil {
		return nil, fault.Reject(fault.CodeFailedPrecondition, "this server does not run resumable executions (it has no continuation keys)").Because(fault.ReasonResumableUnsupported)
	}
	if len(r.Answers) > MaxAnswers {
		// Refused before the digest sorts and encodes them all.
		return nil, fault.Reject(fault.CodeInvalidArgument, "%d answers: a paused execution waits for at most %d calls", len(r.Answers), MaxAnswers).Because(fault.ReasonAnswersInvalid)
	}
	o, ferr := e.durable.Open(ctx, r.Continuation, r.Tenant)
	if ferr != nil {
		return nil, ferr
	}
	digest := answersDigest(r.Answers)
	used, ferr := e.durable.Used(ctx, o)
	if ferr != nil {
		return nil, ferr
	}
	var takeover *durable.Use
	if used != nil {
		if !e.mayTakeOver(used, digest) {
			// Used already: StartResume answers it from the use
			// (retry.go); nothing is prepared to run.
			return &Prepared{resume: &resumed{opened: o, digest: digest, used: used}}, nil
		}
		// The replica running it stopped renewing its lease: this retry
		// is prepared to take it over, as a resume from the continuation.
		takeover = used
	}
	if lv := e.parked.peek(o.PauseID); lv != nil {
		// Parked here: the engine waits in memory.
		p := lv.p
		p.req.OnLog = nil
		rs := &resumed{opened: o, usage: lv.usage, parked: true, digest: digest, lastSeq: lv.d.Calls(), takeover: takeover}
		rs.usage.Paused += time.Since(lv.pausedAt)
		pend, _ := lv.d.Paused()
		if rs.answers, ferr = checkAnswers(pend.Pending, r.Answers, p.checkOutput); ferr != nil {
			return nil, ferr.Because(fault.ReasonAnswersInvalid)
		}
		p.resume = rs
		return &p, nil
	}
	if pend, ok := o.Pending(); ok {
		// Refused now, answers that do not fit the pending calls never
		// cost a read and decode of the state, however large.
		if ferr := e.precheckAnswers(o.PauseID, pend, r.Answers); ferr != nil {
			return nil, ferr.Because(fault.ReasonAnswersInvalid)
		}
	}
	st, ferr := o.State(ctx)
	if ferr != nil && ferr.Reason == fault.ReasonContinuationStateGone {
		// Used (and ended) since it was checked above, on another
		// replica, which dropped the state: answered as a retry.
		if used, uerr := e.durable.Used(ctx, o); uerr == nil && used != nil && !e.mayTakeOver(used, digest) {
			return &Prepared{resume: &resumed{opened: o, digest: digest, used: used}}, nil
		}
	}
	if ferr != nil {
		return nil, ferr
	}
	req := core.Request{
		ExecutionID:        st.ExecutionID,
		Script:             st.Script,
		Input:              st.Input,
		Limits:             st.Limits,
		AllowedTools:       st.AllowedTools,
		NoServerTools:      st.NoServerTools,
		ResultSchema:       st.ResultSchema,
		IncludeToolResults: st.IncludeToolResults,
		Determinism:        core.Determinism{Deterministic: true, Seed: st.Seed, ClockStart: st.ClockStart, ClockStartSet: true},
		Resumable:          true,
		RequireApproval:    st.RequireApproval,
		Tenant:             r.Tenant,
	}
	if st.Script.Language == core.LanguageWASM && len(r.Module) > 0 {
		req.Module = r.Module
	}
	for _, d := range st.ClientTools {
		req.ClientTools = append(req.ClientTools, tools.Tool{Definition: d})
	}
	// A server tool this replica lacks (removed in a rolling deploy, say)
	// does not refuse the resume: the journal answers the calls made
	// before the pause, and a later call of it fails with unknown_tool, as
	// in a fresh execution.
	req.AllowedTools = e.registered(st.AllowedTools)
	req.RequireApproval = e.registered(st.RequireApproval)
	if len(st.AllowedTools) > 0 && len(req.AllowedTools) == 0 {
		req.NoServerTools = true
	}
	p, ferr := e.PrepareContext(ctx, req, r.Ceilings)
	if ferr != nil {
		return nil, ferr
	}
	rs := &resumed{opened: o, journal: st.Journal, usage: st.Usage, digest: digest, takeover: takeover}
	rs.usage.Paused += time.Since(st.PausedAt)
	for _, c := range st.Journal.Calls {
		rs.lastSeq = max(rs.lastSeq, c.Seq)
	}
	for _, a := range st.Journal.Pending {
		rs.lastSeq = max(rs.lastSeq, a.Seq)
	}
	if _, ok := o.Pending(); ok {
		e.rememberOutputs(o.PauseID, p, st.Journal.Pending)
	}
	if rs.answers, ferr = checkAnswers(st.Journal.Pending, r.Answers, p.checkOutput); ferr != nil {
		return nil, ferr.Because(fault.ReasonAnswersInvalid)
	}
	p.resume = rs
	return p, nil
}

// Resumed reports whether p resumes a paused execution.
func (p *Prepared) Resumed() bool { return p.resume != nil }

// MadeNow reports whether the call seq in the trace of p's result was
// made (or answered) by this run: every call of an execution that starts;
// of a resumed one, the calls it answered and the ones it made after the
// pause, not the ones an earlier segment made (the trace covers the whole
// execution).
func (p *Prepared) MadeNow(seq int32) bool {
	rs := p.resume
	if rs == nil || seq > rs.lastSeq {
		return true
	}
	_, answered := rs.answers[seq]
	return answered
}

// continueRun goes on with a resumed execution whose continuation this
// replica used up, until it pauses again or ends. An execution paused
// longer than its max_paused_time ends with PAUSE_LIMIT without running.
func (e *Executor) continueRun(ctx context.Context, p *Prepared) (*core.Result, *fault.Error) {
	ctx, span := e.startSpan(ctx, p)
	res, ferr := e.continueSegment(ctx, p)
	if ferr != nil {
		res = &core.Result{ExecutionID: p.id, Error: ferr}
	}
	e.tracing.EndExecution(span, res)
	if ferr != nil {
		return nil, ferr
	}
	return res, nil
}

// continueSegment runs the segment of continueRun.
func (e *Executor) continueSegment(ctx context.Context, p *Prepared) (*core.Result, *fault.Error) {
	rs := p.resume
	var lv *live
	if rs.parked {
		lv = e.parked.take(rs.opened.PauseID)
	}
	if m := p.limits.MaxPausedTime; m > 0 && rs.usage.Paused > m {
		if lv != nil {
			lv.stopParked()
		}
		res := &core.Result{ExecutionID: p.id, EffectiveLimits: p.limits,
			Error: fault.Breach(fault.KindPauseLimit, int64(m), int64(rs.usage.Paused),
				"the execution waited paused for %s in all, more than its max_paused_time of %s; it ended without resuming", rs.usage.Paused.Round(time.Millisecond), m)}
		res.Stats = core.Stats{Duration: rs.usage.Wall, CPUTime: rs.usage.CPU, QueueTime: p.queued}
		res.ModelMessage = core.ModelMessage(res)
		return res, nil
	}
	if lv == nil {
		if rs.parked {
			// Evicted since PrepareResume: re-run it from the continuation.
			st, ferr := rs.opened.State(ctx)
			if ferr != nil {
				return nil, ferr
			}
			rs.journal = st.Journal
			rs.usage.Pauses, rs.usage.Wall, rs.usage.CPU, rs.usage.LogEntries = st.Usage.Pauses, st.Usage.Wall, st.Usage.CPU, st.Usage.LogEntries
		}
		return e.runResumable(ctx, p), nil
	}
	lv.usage.Paused = rs.usage.Paused
	lv.logs.SetLive(nil)
	lv.unlink = context.AfterFunc(ctx, func() { lv.cancel(context.Cause(ctx)) })
	lv.ranSince = time.Now()
	lv.rc.resume(ctx)
	lv.d.Resume(rs.answers)
	return e.await(ctx, lv), nil
}

// checkAnswers checks that answers answer every pending call exactly
// once, each with what it waits for; a client tool's output must pass
// output (Prepared.checkOutput: the tool's output schema). Every error
// names the call. An output check's errUndecided is returned as it is.
func checkAnswers(pending []core.Action, answers []core.Answer, output func(tool string, out []byte) *fault.Error) (map[int32]core.Answer, *fault.Error) {
	byID := make(map[string]*core.Action, len(pending))
	for i := range pending {
		byID[pending[i].CallID] = &pending[i]
	}
	out := make(map[int32]core.Answer, len(answers))
	for i, a := range answers {
		where := fmt.Sprintf("answers[%d] (call_id %q)", i, core.Clip(a.CallID, core.QuotedBytes))
		act, ok := byID[a.CallID]
		if !ok {
			return nil, fault.Reject(fault.CodeInvalidArgument, "%s: no pending call has this id; the pending calls are %s", where, callIDs(pending))
		}
		where = fmt.Sprintf("answers[%d] (call_id %q, tools.%s)", i, a.CallID, act.Tool)
		if _, dup := out[act.Seq]; dup {
			return nil, fault.Reject(fault.CodeInvalidArgument, "%s: the call is answered twice", where)
		}
		if !OneOutcome(a) {
			return nil, fault.Reject(fault.CodeInvalidArgument, "%s: give exactly one of output, error and an approval decision", where)
		}
		if len(a.Reason) > MaxReasonBytes {
			return nil, fault.Reject(fault.CodeInvalidArgument, "%s: the reason is longer than %d bytes", where, MaxReasonBytes)
		}
		switch act.Kind {
		case core.ActionApproval:
			if !a.Approve && !a.Deny {
				return nil, fault.Reject(fault.CodeInvalidArgument, "%s: the call waits for approval: approve or deny it", where)
			}
		case core.ActionClientTool:
			if a.Approve || a.Deny {
				return nil, fault.Reject(fault.CodeInvalidArgument, "%s: the call waits for the client tool's output or error, not an approval", where)
			}
			if a.Error != nil {
				if a.Error.Code == "" {
					return nil, fault.Reject(fault.CodeInvalidArgument, "%s: the error needs a code", where)
				}
				break
			}
			if ferr := output(act.Tool, a.Output); ferr == errUndecided {
				return nil, ferr
			} else if ferr != nil {
				return nil, fault.Reject(fault.CodeInvalidArgument, "%s: %s", where, ferr.Message)
			}
		}
		out[act.Seq] = a
	}
	for i := range pending {
		if _, ok := out[pending[i].Seq]; !ok {
			a := &pending[i]
			return nil, fault.Reject(fault.CodeInvalidArgument, "call_id %q (tools.%s, waiting for %s) has no answer: answer every pending call", a.CallID, a.Tool, what(a.Kind))
		}
	}
	return out, nil
}

// checkOutput validates a client tool's output against its schema.
func (p *Prepared) checkOutput(tool string, out []byte) *fault.Error {
	if t := p.tool(tool); t != nil {
		return checkOutputAgainst(tool, t.Output, out)
	}
	return fault.Reject(fault.CodeInvalidArgument, "tools.%s is not a client tool of this execution", tool)
}

// tool returns the tool of p named name, or nil.
func (p *Prepared) tool(name string) *tools.Compiled {
	for _, t := range p.tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// checkOutputAgainst validates the output of client tool tool against its
// output schema (nil: any JSON value).
func checkOutputAgainst(tool string, schema *tools.Schema, out []byte) *fault.Error {
	if schema == nil {
		if !json.Valid(out) {
			_, err := jsonval.Decode(out)
			return invalidOutput(err)
		}
		return nil
	}
	vs, err := schema.Validate(out)
	if errors.Is(err, tools.ErrCheckTooCostly) {
		return fault.Reject(fault.CodeInvalidArgument, "output could not be checked against the output schema of %s: %v", tool, err)
	}
	if err != nil {
		return invalidOutput(err)
	}
	if len(vs) > 0 {
		return fault.Reject(fault.CodeInvalidArgument, "output does not match the output schema of %s: %s", tool, tools.FormatViolations(vs))
	}
	return nil
}

// invalidOutput is the refusal of an output that did not decode: nested too
// deep (valid JSON, but deeper than any value ptc takes), or not JSON.
func invalidOutput(err error) *fault.Error {
	if errors.Is(err, jsonval.ErrTooDeep) {
		return fault.Reject(fault.CodeInvalidArgument, "output is nested more than %d levels deep, deeper than ptc accepts; answer with a flatter value", jsonval.MaxDepth)
	}
	if errors.Is(err, jsonval.ErrMergedNames) {
		return fault.Reject(fault.CodeInvalidArgument, "output has property names that differ only in unpaired surrogates or invalid UTF-8, which its output schema cannot tell apart; rename them")
	}
	return fault.Reject(fault.CodeInvalidArgument, "output is not valid JSON")
}

func what(k core.ActionKind) string {
	if k == core.ActionApproval {
		return "approval"
	}
	return "its output"
}

func callIDs(pending []core.Action) string {
	s := ""
	for i, a := range pending {
		if i > 0 {
			s += ", "
		}
		s += a.CallID
	}
	if s == "" {
		return "(none)"
	}
	return s
}

// registered is names less the ones that are not server tools here.
func (e *Executor) registered(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := e.reg.Lookup(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// OneOutcome reports whether a sets exactly one of its outcomes: output,
// error, approve and deny. An answer with more is ambiguous (approve and
// deny, or approve and an output) and is refused, never read as one of
// them.
func OneOutcome(a core.Answer) bool {
	n := 0
	for _, set := range []bool{len(a.Output) > 0, a.Error != nil, a.Approve, a.Deny} {
		if set {
			n++
		}
	}
	return n == 1
}
