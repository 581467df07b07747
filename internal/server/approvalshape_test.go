package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// unknownField is field 99 (a varint, 1): a field no ptc message has, as
// a newer client could send it.
var unknownField = protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1)

// withUnknown returns m with unknownField among its unknown fields.
func withUnknown[M interface{ ProtoReflect() protoreflect.Message }](m M) M {
	m.ProtoReflect().SetUnknown(append(m.ProtoReflect().GetUnknown(), unknownField...))
	return m
}

// approvalShapes are answers to a call waiting for approval, of every
// shape: only the first approves.
func approvalShapes() []struct {
	name    string
	outcome func() (*ptcv1.ActionAnswer, bool)
	want    string // what the script sees, or the prefix of it
} {
	approval := func(ap *ptcv1.Approval) *ptcv1.ActionAnswer {
		return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_Approval{Approval: ap}}
	}
	return []struct {
		name    string
		outcome func() (*ptcv1.ActionAnswer, bool)
		want    string
	}{
		{"approved", func() (*ptcv1.ActionAnswer, bool) { return approval(&ptcv1.Approval{Approved: true}), true }, `sent`},
		{"approved with a reason", func() (*ptcv1.ActionAnswer, bool) {
			return approval(&ptcv1.Approval{Approved: true, Reason: "fine"}), true
		}, `sent`},
		{"empty approval", func() (*ptcv1.ActionAnswer, bool) { return approval(&ptcv1.Approval{}), true }, `denied: the call was denied`},
		{"a reason only", func() (*ptcv1.ActionAnswer, bool) { return approval(&ptcv1.Approval{Reason: "yes"}), true }, `denied: yes`},
		{"approved with an unknown field in the approval", func() (*ptcv1.ActionAnswer, bool) {
			return approval(withUnknown(&ptcv1.Approval{Approved: true})), true
		}, "denied: " + wire.ReasonUnknownFields},
		{"approved with an unknown field in the answer", func() (*ptcv1.ActionAnswer, bool) {
			return withUnknown(approval(&ptcv1.Approval{Approved: true})), true
		}, "denied: " + wire.ReasonUnknownFields},
		{"denied with an unknown field", func() (*ptcv1.ActionAnswer, bool) {
			return approval(withUnknown(&ptcv1.Approval{Reason: "no"})), true
		}, "denied: no"},
		{"an approval oneof holding nil", func() (*ptcv1.ActionAnswer, bool) {
			return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_Approval{}}, true
		}, `denied: the call was denied`},
		{"no outcome", func() (*ptcv1.ActionAnswer, bool) { return &ptcv1.ActionAnswer{}, false }, "denied: the approval answer held no approval"},
		{"an output", func() (*ptcv1.ActionAnswer, bool) {
			return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: `true`}}, false
		}, "denied: the approval answer held no approval"},
		{"an error", func() (*ptcv1.ActionAnswer, bool) {
			return &ptcv1.ActionAnswer{Outcome: &ptcv1.ActionAnswer_Error{Error: &ptcv1.ToolError{Code: "approved"}}}, false
		}, "denied: the approval answer held no approval"},
	}
}

// TestSessionApprovalShapes: a Session's approval_answer of every shape.
// Only approved true, with no field the server does not know, runs the
// tool; an answer that holds no approval denies the call (the client is
// also told, in a ProtocolError) instead of leaving it waiting.
func TestSessionApprovalShapes(t *testing.T) {
	for _, tc := range approvalShapes() {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			p := startProd(t, prodConfig{tools: []tools.Tool{sendTool(&runs)}})
			ans, isApproval := tc.outcome()
			got, protoErrs := answerOverStream(t, p.rpc, ans)
			if got != jsonString(tc.want) {
				t.Fatalf("result %s, want %s", got, jsonString(tc.want))
			}
			if want := map[bool]int64{true: 1}[tc.want == "sent"]; runs.Load() != want {
				t.Fatalf("the tool ran %d times, want %d", runs.Load(), want)
			}
			if want := map[bool]int{false: 1}[isApproval]; len(protoErrs) != want || (want == 1 && !strings.Contains(protoErrs[0], "holds no approval; the call is denied")) {
				t.Fatalf("protocol errors %q", protoErrs)
			}
		})
	}
}

// TestResumeApprovalShapes: a Resume's answer to a paused approval, of
// every shape. Only approved true, with no field the server does not
// know, runs the tool; an approval of any other shape denies the call; an
// answer that holds no approval is refused (nothing runs).
func TestResumeApprovalShapes(t *testing.T) {
	for _, tc := range approvalShapes() {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			p := startProd(t, prodConfig{tools: []tools.Tool{sendTool(&runs)}})
			ctx := context.Background()
			res, err := p.rpc.Execute(ctx, &ptcv1.ExecuteRequest{Script: js(approvalScript), Resumable: true})
			if err != nil || len(res.GetPendingActions()) != 1 {
				t.Fatal(err, res)
			}
			ans, isApproval := tc.outcome()
			ans.CallId = res.GetPendingActions()[0].GetCallId()
			next, err := p.rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: res.GetContinuation(), Answers: []*ptcv1.ActionAnswer{ans}})
			if !isApproval {
				if status.Code(err) != codes.InvalidArgument || runs.Load() != 0 {
					t.Fatalf("Resume: %v, %d runs", err, runs.Load())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := next.GetExecution().GetResultJson(); got != jsonString(tc.want) {
				t.Fatalf("result %s, want %s", got, jsonString(tc.want))
			}
			if want := map[bool]int64{true: 1}[tc.want == "sent"]; runs.Load() != want {
				t.Fatalf("the tool ran %d times, want %d", runs.Load(), want)
			}
		})
	}
}

// answerOverStream runs approvalScript as a Session, answers its approval
// request with ans (its call id set here), and returns the result JSON and
// the protocol errors the server sent.
func answerOverStream(t *testing.T, c ptcv1.RunnerServiceClient, ans *ptcv1.ActionAnswer) (string, []string) {
	t.Helper()
	s, err := c.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: &ptcv1.ExecuteRequest{Script: js(approvalScript)}}}}); err != nil {
		t.Fatal(err)
	}
	var protoErrs []string
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch msg := m.GetMsg().(type) {
		case *ptcv1.SessionResponse_ApprovalRequest:
			ans.CallId = msg.ApprovalRequest.GetAction().GetCallId()
			if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ApprovalAnswer{ApprovalAnswer: ans}}); err != nil {
				t.Fatal(err)
			}
		case *ptcv1.SessionResponse_ProtocolError:
			protoErrs = append(protoErrs, msg.ProtocolError.GetMessage())
		case *ptcv1.SessionResponse_Result:
			if msg.Result.GetError() != nil {
				t.Fatalf("result %v", msg.Result)
			}
			return msg.Result.GetResultJson(), protoErrs
		}
	}
}

// TestGoClientApprovalShapes: the Go client is default-deny too. Resume
// refuses an answer that is not exactly one outcome before sending it
// (the wire holds one: approve with deny, or with an output, went out as
// an approval), and Run denies the call of an approval callback that
// panics, without the panic's text.
func TestGoClientApprovalShapes(t *testing.T) {
	var runs atomic.Int64
	p := startProd(t, prodConfig{tools: []tools.Tool{sendTool(&runs)}})
	ctx := context.Background()
	res, err := p.client.Execute(ctx, ptc.Request{Source: approvalScript, Resumable: true})
	if err != nil || !res.RequiresAction() {
		t.Fatal(err, res)
	}
	id := res.Pending[0].CallID
	for _, tc := range []struct {
		name string
		a    ptc.Answer
	}{
		{"empty", ptc.Answer{CallID: id}},
		{"approve and deny", ptc.Answer{CallID: id, Approve: true, Deny: true}},
		{"approve and an output", ptc.Answer{CallID: id, Approve: true, Output: json.RawMessage(`true`)}},
		{"approve and an error", ptc.Answer{CallID: id, Approve: true, Error: &tools.Error{Code: "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := p.client.Resume(ctx, res.Continuation, tc.a); ptc.CodeOf(err) != ptc.InvalidArgument || runs.Load() != 0 {
				t.Fatalf("%v, ran %d times", err, runs.Load())
			}
		})
	}
	out, err := p.client.Run(ctx, ptc.Request{Source: approvalScript,
		Approve: func(context.Context, ptc.Action) (bool, string) { panic("approve: secret detail") }})
	if err != nil || string(out.Result) != `"denied: the approval callback failed unexpectedly; the call is denied"` || runs.Load() != 0 {
		t.Fatalf("panicking callback: %v %s, ran %d times", err, out.Result, runs.Load())
	}
}
