package adversarial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// famApprovals: approval answers of every shape on every path a gRPC
// caller has (a Session's approval_answer, a Resume's answers). Only an
// unambiguous yes may run the gated call.
const famApprovals family = "approvals"

// gatedScript calls a demo tool the request gates (requireGated) and
// returns "ran" when the call ran, or the code of its rejection.
const gatedScript = `try { await tools.get_budget_by_level({level: "senior"}); return "ran"; } catch (e) { return e.code; }`

// requireGated makes the request's caller approve get_budget_by_level.
func requireGated(r *ptcv1.ExecuteRequest) { r.RequireApproval = []string{"get_budget_by_level"} }

// resumable makes the request pause at approvals instead of asking.
func resumable(r *ptcv1.ExecuteRequest) { r.Resumable = true }

// withRawField returns m with a field appended on the wire after its
// known fields: an unknown number, or a known one repeated (the last
// value read wins).
func withRawField[M interface{ ProtoReflect() protoreflect.Message }](m M, num protowire.Number, v uint64) M {
	raw := protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	m.ProtoReflect().SetUnknown(append(m.ProtoReflect().GetUnknown(), raw...))
	return m
}

// answerShape is one answer to a call waiting for approval; approves is
// whether it may run the call, approval whether it holds an approval at
// all (a Resume refuses one that does not).
type answerShape struct {
	name      string
	answer    func() *ptcv1.ActionAnswer
	approves  bool
	approval  bool
	fast      bool
	protoNote string // on a Session: a ProtocolError must say this
}

func approvalOf(ap *ptcv1.Approval) *ptcv1.ActionAnswer {
	return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_Approval{Approval: ap}}
}

func answerShapes() []answerShape {
	return []answerShape{
		{name: "approved", answer: func() *ptcv1.ActionAnswer { return approvalOf(&ptcv1.Approval{Approved: true}) }, approves: true, approval: true, fast: true},
		{name: "empty-approval", answer: func() *ptcv1.ActionAnswer { return approvalOf(&ptcv1.Approval{}) }, approval: true, fast: true},
		{name: "reason-yes-only", answer: func() *ptcv1.ActionAnswer { return approvalOf(&ptcv1.Approval{Reason: "yes"}) }, approval: true},
		{name: "approval-oneof-empty", answer: func() *ptcv1.ActionAnswer {
			return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_Approval{}}
		}, approval: true},
		{name: "approved-then-false-on-the-wire", answer: func() *ptcv1.ActionAnswer {
			return approvalOf(withRawField(&ptcv1.Approval{Approved: true}, 1, 0))
		}, approval: true},
		{name: "approved-unknown-field-in-approval", answer: func() *ptcv1.ActionAnswer {
			return approvalOf(withRawField(&ptcv1.Approval{Approved: true}, 99, 1))
		}, approval: true},
		{name: "approved-unknown-field-in-answer", answer: func() *ptcv1.ActionAnswer {
			return withRawField(approvalOf(&ptcv1.Approval{Approved: true}), 99, 1)
		}, approval: true},
		{name: "no-outcome", answer: func() *ptcv1.ActionAnswer { return &ptcv1.ActionAnswer{} }, protoNote: "holds no approval"},
		{name: "output-true", answer: func() *ptcv1.ActionAnswer {
			return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: `true`}}
		}, protoNote: "holds no approval"},
		{name: "output-approved", answer: func() *ptcv1.ActionAnswer {
			return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: `{"approve":true}`}}
		}, protoNote: "holds no approval"},
		{name: "tool-error", answer: func() *ptcv1.ActionAnswer {
			return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_Error{Error: &ptcv1.ToolError{Code: "approved"}}}
		}, protoNote: "holds no approval"},
	}
}

func approvalsCases() []tcase {
	var cs []tcase
	for _, s := range answerShapes() {
		want := succeeds(`"denied"`)
		if s.approves {
			want = succeeds(`"ran"`)
		}
		cs = append(cs, tcase{
			name: "approval-session-" + s.name, family: famApprovals, fast: s.fast, bound: 15 * time.Second, want: want,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				return approveOverSession(ctx, e, s)
			},
		})
		want = succeeds(`"denied"`)
		switch {
		case s.approves:
			want = succeeds(`"ran"`)
		case !s.approval:
			want = refused(codes.InvalidArgument)
		}
		cs = append(cs, tcase{
			name: "approval-resume-" + s.name, family: famApprovals, fast: s.fast, bound: 15 * time.Second, want: want,
			do: func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				return approveInResume(ctx, e, s)
			},
		})
	}
	return cs
}

// approveOverSession runs gatedScript in a Session and answers its
// approval request with s; a ProtocolError must come when s says so, and
// none otherwise.
func approveOverSession(ctx context.Context, e *env, s answerShape) (*ptcv1.ExecuteResponse, error) {
	st, err := e.c.Session(ctx)
	if err != nil {
		return nil, err
	}
	start := jsReq(gatedScript, requireGated, timeout(10*time.Second))
	if err := st.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: start}}}); err != nil {
		return nil, err
	}
	var protoErrs []string
	asked := 0
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the stream ended without a result")
		}
		if err != nil {
			return nil, err
		}
		switch v := m.GetMsg().(type) {
		case *ptcv1.SessionResponse_ApprovalRequest:
			asked++
			ans := s.answer()
			ans.CallId = v.ApprovalRequest.GetAction().GetCallId()
			if err := st.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ApprovalAnswer{ApprovalAnswer: ans}}); err != nil {
				return nil, err
			}
		case *ptcv1.SessionResponse_ProtocolError:
			protoErrs = append(protoErrs, v.ProtocolError.GetMessage())
		case *ptcv1.SessionResponse_Result:
			if asked != 1 {
				e.fail("the server asked for approval %d times, want once", asked)
			}
			switch {
			case s.protoNote == "" && len(protoErrs) > 0:
				e.fail("unexpected protocol errors %q", protoErrs)
			case s.protoNote != "" && (len(protoErrs) != 1 || !strings.Contains(protoErrs[0], s.protoNote)):
				e.fail("protocol errors %q, want one saying %q", protoErrs, s.protoNote)
			}
			return v.Result, nil
		}
	}
}

// approveInResume pauses gatedScript at its approval (a resumable
// Execute) and resumes it with s as the answer.
func approveInResume(ctx context.Context, e *env, s answerShape) (*ptcv1.ExecuteResponse, error) {
	res, err := e.c.Execute(ctx, jsReq(gatedScript, requireGated, resumable, timeout(10*time.Second)))
	if err != nil {
		// Not the status the case expects of Resume.
		return nil, fmt.Errorf("the execution did not pause: %v", err)
	}
	if len(res.GetPendingActions()) != 1 || res.GetPendingActions()[0].GetKind() != ptcv1.ActionKind_ACTION_KIND_APPROVAL {
		return nil, fmt.Errorf("the execution did not pause at the approval: %v", res)
	}
	ans := s.answer()
	ans.CallId = res.GetPendingActions()[0].GetCallId()
	next, err := e.c.Resume(ctx, &ptcv1.ResumeRequest{Continuation: res.GetContinuation(), Answers: []*ptcv1.ActionAnswer{ans}})
	if err != nil {
		return nil, err
	}
	return next.GetExecution(), nil
}
