package server_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// TestSessionLongApprovalReason: a Session denial whose reason is longer
// than MaxReasonBytes is not refused (which would leave the call waiting):
// the server cuts it, as the clients do, and the script gets the cut
// reason; the Go client cuts it before sending. A reason within the bound
// arrives whole.
func TestSessionLongApprovalReason(t *testing.T) {
	var runs atomic.Int64
	p := startProd(t, prodConfig{tools: []tools.Tool{sendTool(&runs)}})
	long := strings.Repeat("r", executor.MaxReasonBytes+100)
	cut := executor.CutReason(long)
	cases := []struct {
		name, reason, want string
		goClient           bool
	}{
		{"raw stream, within the bound", "not during the audit", "denied: not during the audit", false},
		{"raw stream, too long", long, "denied: " + cut, false},
		{"Go client, too long", long, "denied: " + cut, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if tc.goClient {
				res, err := p.client.Run(context.Background(), ptc.Request{Source: approvalScript,
					Approve: func(context.Context, ptc.Action) (bool, string) { return false, tc.reason }})
				if err != nil || res.Error != nil {
					t.Fatal(err, res)
				}
				got = string(res.Result)
			} else {
				got = denyOverStream(t, p.rpc, tc.reason)
			}
			if got != jsonString(tc.want) {
				t.Fatalf("result %.80s… (%d bytes), want %.80s… (%d bytes)", got, len(got), jsonString(tc.want), len(jsonString(tc.want)))
			}
		})
	}
	if runs.Load() != 0 {
		t.Fatalf("a denied call ran %d times", runs.Load())
	}
}

func jsonString(s string) string { return `"` + s + `"` }

// denyOverStream runs approvalScript as a Session and denies its call with
// reason; it returns the result JSON. A protocol error fails the test.
func denyOverStream(t *testing.T, c ptcv1.RunnerServiceClient, reason string) string {
	t.Helper()
	s, err := c.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: &ptcv1.ExecuteRequest{Script: js(approvalScript)}}}}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch msg := m.GetMsg().(type) {
		case *ptcv1.SessionResponse_ApprovalRequest:
			ans := &ptcv1.ActionAnswer{CallId: msg.ApprovalRequest.GetAction().GetCallId(),
				Outcome: &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Reason: reason}}}
			if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ApprovalAnswer{ApprovalAnswer: ans}}); err != nil {
				t.Fatal(err)
			}
		case *ptcv1.SessionResponse_ProtocolError:
			t.Fatalf("protocol error: %v", msg.ProtocolError)
		case *ptcv1.SessionResponse_Result:
			if msg.Result.GetError() != nil {
				t.Fatalf("result %v", msg.Result)
			}
			return msg.Result.GetResultJson()
		}
	}
}

// recordingStream records the reasons of the approval answers a Session
// receives, before the server sees them.
type recordingStream struct {
	grpc.ServerStream
	reasons chan<- string
}

func (s recordingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if r, ok := m.(*ptcv1.SessionRequest); ok && err == nil && r.GetApprovalAnswer() != nil {
		s.reasons <- r.GetApprovalAnswer().GetApproval().GetReason()
	}
	return err
}

// TestGoClientCutsApprovalReason: the Go client sends a denial reason cut
// to MaxReasonBytes (with "…"), as docs/clients.md says every client does.
func TestGoClientCutsApprovalReason(t *testing.T) {
	var runs atomic.Int64
	reasons := make(chan string, 1)
	gs := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, recordingStream{ServerStream: ss, reasons: reasons})
	}))
	ptcv1.RegisterRunnerServiceServer(gs, server.New(newExecutor(t, sendTool(&runs))))
	conn := serve(t, gs)
	long := strings.Repeat("é", executor.MaxReasonBytes)
	res, err := ptc.NewClient(conn).Run(context.Background(), ptc.Request{Source: approvalScript,
		Approve: func(context.Context, ptc.Action) (bool, string) { return false, long }})
	if err != nil || res.Error != nil {
		t.Fatal(err, res)
	}
	sent := <-reasons
	if sent != executor.CutReason(long) || len(sent) > executor.MaxReasonBytes {
		t.Fatalf("the client sent a reason of %d bytes ending %q", len(sent), sent[len(sent)-6:])
	}
}
