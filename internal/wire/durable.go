package wire

import (
	"encoding/json"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// The conversions of resumable executions: pending actions, answers,
// approvals and the state of a response.

// ActionPB converts a pending action.
func ActionPB(a core.Action) *ptcv1.PendingAction {
	return &ptcv1.PendingAction{CallId: a.CallID, Kind: ptcv1.ActionKind(a.Kind), Seq: a.Seq, Tool: text(a.Tool),
		ArgumentsJson: jsonText(a.Arguments), IdempotencyKey: a.IdempotencyKey, Reason: text(a.Reason),
		Traceparent: a.Traceparent, Tracestate: a.Tracestate}
}

// ActionFromPB converts a pending action.
func ActionFromPB(a *ptcv1.PendingAction) core.Action {
	return core.Action{CallID: a.GetCallId(), Kind: core.ActionKind(a.GetKind()), Seq: a.GetSeq(), Tool: a.GetTool(),
		Arguments: json.RawMessage(a.GetArgumentsJson()), IdempotencyKey: a.GetIdempotencyKey(), Reason: a.GetReason(),
		Traceparent: a.GetTraceparent(), Tracestate: a.GetTracestate()}
}

// AnswerPB converts an answer.
func AnswerPB(a core.Answer) *ptcv1.ActionAnswer {
	out := &ptcv1.ActionAnswer{CallId: a.CallID}
	switch {
	case a.Approve || a.Deny:
		// Both set is not a yes.
		out.Outcome = &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Approved: a.Approve && !a.Deny, Reason: a.Reason}}
	case a.Error != nil:
		out.Outcome = &ptcv1.ActionAnswer_Error{Error: &ptcv1.ToolError{Code: text(a.Error.Code), Message: text(a.Error.Message)}}
	case a.Output != nil:
		out.Outcome = &ptcv1.ActionAnswer_OutputJson{OutputJson: jsonText(a.Output)}
	}
	return out
}

// AnswerFromPB converts an answer; an answer without an outcome converts
// to one with nothing set (the executor names the call when it refuses it).
func AnswerFromPB(a *ptcv1.ActionAnswer) core.Answer {
	out := core.Answer{CallID: a.GetCallId()}
	switch o := a.GetOutcome().(type) {
	case *ptcv1.ActionAnswer_OutputJson:
		// An empty output_json is not JSON: kept non-nil so that the
		// executor refuses it as such instead of as a missing outcome.
		out.Output = append(json.RawMessage{}, o.OutputJson...)
	case *ptcv1.ActionAnswer_Error:
		out.Error = &tools.Error{Code: o.Error.GetCode(), Message: o.Error.GetMessage()}
	case *ptcv1.ActionAnswer_Approval:
		ok, why, _ := Decision(a)
		out.Approve, out.Deny, out.Reason = ok, !ok, why
	}
	return out
}

// ReasonUnknownFields is the reason of a denial whose answer said
// approved but held fields this server does not know.
const ReasonUnknownFields = "the approval answer holds fields this server does not know, so it is not a clear yes; the call is denied"

// Decision is the decision an answer carries (a Session's approval_answer,
// a Resume's answer to an approval): approved only when its outcome is an
// Approval with approved set and neither the answer nor the Approval holds
// a field this server does not know (a newer client's condition on the
// approval would be lost); otherwise denied, with the answer's reason, or
// ReasonUnknownFields for an approval that said yes with unknown fields.
// isApproval is false when the answer holds no Approval (nothing is
// approved then either).
func Decision(a *ptcv1.ActionAnswer) (approved bool, reason string, isApproval bool) {
	o, ok := a.GetOutcome().(*ptcv1.ActionAnswer_Approval)
	if !ok || o.Approval == nil {
		return false, "", false
	}
	ap := o.Approval
	if !ap.GetApproved() {
		return false, ap.GetReason(), true
	}
	if len(a.ProtoReflect().GetUnknown()) > 0 || len(ap.ProtoReflect().GetUnknown()) > 0 {
		return false, ReasonUnknownFields, true
	}
	return true, ap.GetReason(), true
}

// AnswersFromPB converts a Resume's answers.
func AnswersFromPB(as []*ptcv1.ActionAnswer) []core.Answer {
	out := make([]core.Answer, len(as))
	for i, a := range as {
		out[i] = AnswerFromPB(a)
	}
	return out
}

// ApprovalRequestPB is the Session message asking to approve a.
func ApprovalRequestPB(a core.Action, deadline time.Time) *ptcv1.ApprovalRequest {
	return &ptcv1.ApprovalRequest{Action: ActionPB(a), Deadline: timestampPB(deadline)}
}

// stateOf sets a response's state, pending actions and continuation.
func stateOf(out *ptcv1.ExecuteResponse, r *core.Result) {
	out.State = ptcv1.ExecutionState_EXECUTION_STATE_COMPLETED
	if len(r.Pending) == 0 {
		return
	}
	out.State = ptcv1.ExecutionState_EXECUTION_STATE_REQUIRES_ACTION
	out.PendingActions = make([]*ptcv1.PendingAction, len(r.Pending))
	for i, a := range r.Pending {
		out.PendingActions[i] = ActionPB(a)
	}
	out.Continuation = r.Continuation
	out.ContinuationExpireTime = timestampPB(r.ContinuationExpires)
}

// stateFromPB reads a response's pending actions and continuation.
func stateFromPB(out *core.Result, r *ptcv1.ExecuteResponse) {
	for _, a := range r.GetPendingActions() {
		out.Pending = append(out.Pending, ActionFromPB(a))
	}
	out.Continuation = r.GetContinuation()
	if t := r.GetContinuationExpireTime(); t != nil {
		out.ContinuationExpires = t.AsTime()
	}
}

// ResumeFromPB converts a Resume request: the continuation, the answers
// and the module.
func ResumeFromPB(in *ptcv1.ResumeRequest) (string, []core.Answer, []byte, *fault.Error) {
	if in == nil || in.GetContinuation() == "" {
		return "", nil, nil, fault.Reject(fault.CodeInvalidArgument, "continuation is empty: pass the continuation of a paused execution").Because(fault.ReasonContinuationMalformed)
	}
	return in.GetContinuation(), AnswersFromPB(in.GetAnswers()), in.GetWasmModule(), nil
}

// ResumePB converts a Resume request.
func ResumePB(continuation string, answers []core.Answer, module []byte) *ptcv1.ResumeRequest {
	out := &ptcv1.ResumeRequest{Continuation: continuation, WasmModule: module}
	for _, a := range answers {
		out.Answers = append(out.Answers, AnswerPB(a))
	}
	return out
}
