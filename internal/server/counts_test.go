package server_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestRepeatedFieldsCounted: a request whose repeated field has more than
// 10,000 entries is refused INVALID_ARGUMENT on the wire, before it is
// decoded (empty entries cost two bytes each, and decoding millions of
// them cost ptcd seconds and gigabytes), whichever RPC and field; one at
// the bound is decoded and refused by the contract's own, smaller
// bounds. ptcd keeps serving.
func TestRepeatedFieldsCounted(t *testing.T) {
	ex := newExecutor(t, demo.Tools()...)
	gs := grpc.NewServer(server.Interceptors(server.ChainConfig{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})...)
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	f := struct{ rpc ptcv1.RunnerServiceClient }{ptcv1.NewRunnerServiceClient(serve(t, gs))}
	ctx := context.Background()
	emptyTools := func(n int) []*ptcv1.ToolDefinition {
		ts := make([]*ptcv1.ToolDefinition, n)
		for i := range ts {
			ts[i] = &ptcv1.ToolDefinition{}
		}
		return ts
	}
	refused := func(t *testing.T, err error, field string) {
		t.Helper()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "too many entries: field ptc.v1."+field+" has more than 10000 entries") {
			t.Fatalf("%v", err)
		}
	}
	t.Run("client tools of an Execute", func(t *testing.T) {
		req := jsReq(`return 1`)
		req.Resumable = true
		req.ClientTools = emptyTools(10_001)
		_, err := f.rpc.Execute(ctx, req)
		refused(t, err, "ExecuteRequest.client_tools")
		req.ClientTools = emptyTools(10_000)
		if _, err := f.rpc.Execute(ctx, req); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "at most 1024") {
			t.Fatalf("at the wire bound: %v", err)
		}
	})
	t.Run("allowed tools", func(t *testing.T) {
		req := jsReq(`return 1`)
		req.AllowedTools = make([]string, 10_001)
		_, err := f.rpc.Execute(ctx, req)
		refused(t, err, "ExecuteRequest.allowed_tools")
	})
	t.Run("client tools of a Session", func(t *testing.T) {
		start := startMsg(`return 1`)
		start.GetStart().ClientTools = emptyTools(10_001)
		s := startSession(ctx, t, f.rpc, start.GetStart())
		_, err := s.Recv()
		refused(t, err, "SessionStart.client_tools")
	})
	t.Run("answers of a Resume", func(t *testing.T) {
		answers := make([]*ptcv1.ActionAnswer, 10_001)
		for i := range answers {
			answers[i] = &ptcv1.ActionAnswer{}
		}
		_, err := f.rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: "x", Answers: answers})
		refused(t, err, "ResumeRequest.answers")
	})
	t.Run("names of a ListTools", func(t *testing.T) {
		_, err := f.rpc.ListTools(ctx, &ptcv1.ListToolsRequest{Names: make([]string, 10_001)})
		refused(t, err, "ListToolsRequest.names")
	})
	if res, err := f.rpc.Execute(ctx, jsReq(`return 2`)); err != nil || res.GetResultJson() != "2" {
		t.Fatalf("%v %v", err, res)
	}
}
