package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// sendTool needs approval and counts its runs.
func sendTool(runs *atomic.Int64) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: "send", RequiresApproval: true},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`"sent"`), nil
		}}
}

const approvalScript = `try { return await tools.send({}); } catch (e) { return e.code + ": " + e.message; }`

func js(src string) *ptcv1.Script {
	return &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: src}
}

// TestResumeOverGRPC pauses a resumable Execute at a client tool and at an
// approval, and resumes it with Resume.
func TestResumeOverGRPC(t *testing.T) {
	var runs atomic.Int64
	p := startProd(t, prodConfig{tools: []tools.Tool{sendTool(&runs)}})
	ctx := context.Background()
	res, err := p.rpc.Execute(ctx, &ptcv1.ExecuteRequest{Script: js(`
		const who = await tools.pick({n: 2});
		const sent = await tools.send({to: who});
		return {who, sent};`), Resumable: true,
		ClientTools: []*ptcv1.ToolDefinition{{Name: "pick", OutputSchemaJson: `{"type":"string"}`}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.GetState() != ptcv1.ExecutionState_EXECUTION_STATE_REQUIRES_ACTION || len(res.GetPendingActions()) != 1 ||
		res.GetPendingActions()[0].GetKind() != ptcv1.ActionKind_ACTION_KIND_CLIENT_TOOL || res.GetContinuationExpireTime() == nil {
		t.Fatalf("not paused: %v", res)
	}
	a := res.GetPendingActions()[0]
	next, err := p.rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: res.GetContinuation(),
		Answers: []*ptcv1.ActionAnswer{{CallId: a.GetCallId(), Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: `"ana"`}}}})
	if err != nil {
		t.Fatal(err)
	}
	ex := next.GetExecution()
	if len(ex.GetPendingActions()) != 1 || ex.GetPendingActions()[0].GetKind() != ptcv1.ActionKind_ACTION_KIND_APPROVAL ||
		ex.GetPendingActions()[0].GetArgumentsJson() != `{"to":"ana"}` || runs.Load() != 0 {
		t.Fatalf("no approval pending: %v", ex)
	}
	// A wrong answer names the call; nothing runs and the continuation
	// still works.
	_, err = p.rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: ex.GetContinuation(),
		Answers: []*ptcv1.ActionAnswer{{CallId: ex.GetPendingActions()[0].GetCallId(), Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: `1`}}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "tools.send") || reasonOf(err) != "ANSWERS_INVALID" {
		t.Fatalf("wrong answer: %v", err)
	}
	done, err := p.rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: ex.GetContinuation(),
		Answers: []*ptcv1.ActionAnswer{{CallId: ex.GetPendingActions()[0].GetCallId(), Outcome: &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Approved: true}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if done.GetExecution().GetState() != ptcv1.ExecutionState_EXECUTION_STATE_COMPLETED || done.GetExecution().GetResultJson() != `{"who":"ana","sent":"sent"}` || runs.Load() != 1 {
		t.Fatalf("end: %v, runs %d", done.GetExecution(), runs.Load())
	}
	// A retry with the same answers gets the same response; nothing runs
	// again.
	again, err := p.rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: ex.GetContinuation(),
		Answers: []*ptcv1.ActionAnswer{{CallId: ex.GetPendingActions()[0].GetCallId(), Outcome: &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Approved: true}}}}})
	if err != nil || !proto.Equal(again, done) || runs.Load() != 1 {
		t.Fatalf("retry: %v, %v, runs %d", err, again, runs.Load())
	}
	_, err = p.rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: ex.GetContinuation(),
		Answers: []*ptcv1.ActionAnswer{{CallId: ex.GetPendingActions()[0].GetCallId(), Outcome: &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Approved: false}}}}})
	if status.Code(err) != codes.FailedPrecondition || reasonOf(err) != "CONTINUATION_USED" || !strings.Contains(err.Error(), "other answers") || runs.Load() != 1 {
		t.Fatalf("used: %v", err)
	}
	// The Go client reads the reason too.
	_, err = p.client.Resume(ctx, ex.GetContinuation(), ptc.Answer{CallID: ex.GetPendingActions()[0].GetCallId(), Deny: true})
	var pe *ptc.Error
	if !errors.As(err, &pe) || pe.Reason != "CONTINUATION_USED" {
		t.Fatalf("Go client: %v", err)
	}
	for _, tc := range []struct {
		name string
		req  *ptcv1.ExecuteRequest
	}{
		{"client tools without resumable", &ptcv1.ExecuteRequest{Script: js("return 1"), ClientTools: []*ptcv1.ToolDefinition{{Name: "x"}}}},
		{"unknown require_approval", &ptcv1.ExecuteRequest{Script: js("return 1"), RequireApproval: []string{"nope"}}},
	} {
		if _, err := p.rpc.Execute(ctx, tc.req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// reasonOf returns the reason of a status error's ptc ErrorInfo detail.
func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == "ptc.v1" {
			return ei.GetReason()
		}
	}
	return ""
}

// TestApprovalsGoClient: approvals through the Go client, by Execute and
// Resume (resumable) and by Run's callback (a Session).
func TestApprovalsGoClient(t *testing.T) {
	var runs atomic.Int64
	p := startProd(t, prodConfig{tools: []tools.Tool{sendTool(&runs)}})
	ctx := context.Background()
	res, err := p.client.Execute(ctx, ptc.Request{Source: approvalScript, Resumable: true})
	if err != nil || !res.RequiresAction() || !res.Pending[0].Approval || res.Pending[0].Reason == "" {
		t.Fatal(err, res)
	}
	out, err := p.client.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Deny: true, Reason: "over budget"})
	if err != nil || string(out.Result) != `"denied: over budget"` || runs.Load() != 0 {
		t.Fatal(err, out)
	}
	var seen []ptc.Action
	for _, tc := range []struct {
		approve func(context.Context, ptc.Action) (bool, string)
		want    string
		runs    int64
	}{
		{func(_ context.Context, a ptc.Action) (bool, string) { seen = append(seen, a); return true, "" }, `"sent"`, 1},
		{func(_ context.Context, a ptc.Action) (bool, string) { return false, "nope" }, `"denied: nope"`, 1},
		{nil, `"denied: this client has no approval callback (Request.Approve)"`, 1},
	} {
		out, err := p.client.Run(ctx, ptc.Request{Source: approvalScript, Approve: tc.approve})
		if err != nil || string(out.Result) != tc.want || runs.Load() != tc.runs {
			t.Fatalf("Run: %v %s, runs %d", err, out.Result, runs.Load())
		}
	}
	if len(seen) != 1 || seen[0].Tool != "send" || !seen[0].Approval || !strings.HasPrefix(seen[0].IdempotencyKey, "ptc-") {
		t.Fatalf("the callback saw %+v", seen)
	}
	if _, err := p.client.Run(ctx, ptc.Request{Source: "return 1", Resumable: true}); ptc.CodeOf(err) != ptc.InvalidArgument {
		t.Fatalf("resumable Run: %v", err)
	}
}

// TestSessionApprovalProtocol drives a Session's approval messages by hand:
// an answer for an unknown call is a protocol error, the right one lets
// the call run, and a half-close denies a pending approval.
func TestSessionApprovalProtocol(t *testing.T) {
	var runs atomic.Int64
	p := startProd(t, prodConfig{tools: []tools.Tool{sendTool(&runs)}})
	for _, halfClose := range []bool{false, true} {
		s, err := p.rpc.Session(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: &ptcv1.ExecuteRequest{Script: js(approvalScript)}}}})
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		ar := m.GetApprovalRequest()
		if ar == nil || ar.GetAction().GetTool() != "send" || ar.GetAction().GetKind() != ptcv1.ActionKind_ACTION_KIND_APPROVAL {
			t.Fatalf("want an approval request, got %v", m)
		}
		if halfClose {
			_ = s.CloseSend()
		} else {
			_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ApprovalAnswer{ApprovalAnswer: &ptcv1.ActionAnswer{CallId: "zz",
				Outcome: &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Approved: true}}}}})
			if m, err := s.Recv(); err != nil || m.GetProtocolError() == nil {
				t.Fatalf("want a protocol error, got %v %v", m, err)
			}
			_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ApprovalAnswer{ApprovalAnswer: &ptcv1.ActionAnswer{CallId: ar.GetAction().GetCallId(),
				Outcome: &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Approved: true}}}}})
		}
		var final *ptcv1.ExecuteResponse
		for final == nil {
			m, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			final = m.GetResult()
		}
		want := `"sent"`
		if halfClose {
			want = `"denied: the client closed its stream before deciding"`
		}
		if final.GetResultJson() != want {
			t.Fatalf("half-close %v: %v", halfClose, final)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("runs %d", runs.Load())
	}
}

// TestContinuationTenantBound: a continuation resumes only for the tenant
// that paused it.
func TestContinuationTenantBound(t *testing.T) {
	var runs atomic.Int64
	p := startProd(t, prodConfig{authOn: true, tenants: tenantsAB, tools: []tools.Tool{sendTool(&runs)}})
	res, err := p.rpc.Execute(bearer("token-b"), &ptcv1.ExecuteRequest{Script: js(approvalScript), Resumable: true})
	if err != nil || len(res.GetPendingActions()) != 1 {
		t.Fatal(err, res)
	}
	req := &ptcv1.ResumeRequest{Continuation: res.GetContinuation(), Answers: []*ptcv1.ActionAnswer{{CallId: res.GetPendingActions()[0].GetCallId(),
		Outcome: &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Approved: true}}}}}
	if _, err := p.rpc.Resume(bearer("token-a"), req); status.Code(err) != codes.PermissionDenied || runs.Load() != 0 {
		t.Fatalf("another tenant: %v", err)
	}
	if out, err := p.rpc.Resume(bearer("token-b"), req); err != nil || out.GetExecution().GetResultJson() != `"sent"` {
		t.Fatal(err, out)
	}
}
