package server_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// TestCallerValuesCutInErrors: a caller's value quoted in an error or a
// ProtocolError comes back cut, not whole: a megabyte of tool name or
// call_id costs the server a short message, and the call keeps its
// classification.
func TestCallerValuesCutInErrors(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	huge := strings.Repeat("\x01", 1<<20)
	short := func(t *testing.T, err error, code codes.Code) {
		t.Helper()
		if status.Code(err) != code || len(status.Convert(err).Message()) > 1<<10 {
			t.Fatalf("%v, a message of %d bytes", status.Code(err), len(status.Convert(err).Message()))
		}
	}
	t.Run("ListTools names", func(t *testing.T) {
		_, err := f.rpc.ListTools(ctx, &ptcv1.ListToolsRequest{Names: []string{huge}})
		short(t, err, codes.InvalidArgument)
	})
	t.Run("allowed_tools", func(t *testing.T) {
		req := jsReq(`return 1`)
		req.AllowedTools = []string{huge}
		_, err := f.rpc.Execute(ctx, req)
		short(t, err, codes.InvalidArgument)
	})
	t.Run("require_approval", func(t *testing.T) {
		req := jsReq(`return 1`)
		req.RequireApproval = []string{huge}
		_, err := f.rpc.Execute(ctx, req)
		short(t, err, codes.InvalidArgument)
	})
	t.Run("a script's tool name", func(t *testing.T) {
		res, err := f.rpc.Execute(ctx, jsReq(`try { await tools["x".repeat(1 << 20)]({}) } catch (e) { return [e.code, e.message.length, e.tool.length] }`))
		if err != nil || res.GetResultJson() == "" || len(res.GetTrace()) != 1 || len(res.GetTrace()[0].GetTool()) > 1<<10 {
			t.Fatalf("%v %v", err, res)
		}
		if !strings.HasPrefix(res.GetResultJson(), `["unknown_tool",`) || len(res.GetResultJson()) > 40 {
			t.Fatalf("the script saw %s", res.GetResultJson())
		}
	})
	t.Run("Session call_id", func(t *testing.T) {
		s, err := f.rpc.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Send(startMsg(`return await tools.c({})`, &ptcv1.ToolDefinition{Name: "c"}))
		var call *ptcv1.ToolCall
		for call == nil {
			m, err := s.Recv()
			if err != nil {
				t.Fatal(err)
			}
			call = m.GetToolCall()
		}
		_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: huge, Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `1`}}}})
		m, err := s.Recv()
		pe := m.GetProtocolError()
		if err != nil || pe == nil || len(pe.GetCallId()) > 1<<10 || len(pe.GetMessage()) > 1<<10 {
			t.Fatalf("%v %v", err, m)
		}
		// The session goes on.
		_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: call.GetCallId(), Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `2`}}}})
		for {
			m, err := s.Recv()
			if err == io.EOF {
				t.Fatal("no result")
			}
			if err != nil {
				t.Fatal(err)
			}
			if r := m.GetResult(); r != nil {
				if r.GetResultJson() != "2" {
					t.Fatal(r)
				}
				return
			}
		}
	})
}
