package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/executor"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestMain doubles as the worker entry point: the worker-mode tests start
// this test binary as their worker processes.
func TestMain(m *testing.M) {
	if code, ok := worker.Main(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

// echoService is a bare gRPC service on the same server, the baseline of
// the benchmarks.
type echoService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (echoService) UnaryCall(_ context.Context, in *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{Payload: in.GetPayload()}, nil
}

func (echoService) FullDuplexCall(s testgrpc.TestService_FullDuplexCallServer) error {
	for {
		m, err := s.Recv()
		if err != nil {
			return nil
		}
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}

// newExecutor returns an executor with tools, closed at the end of the test.
func newExecutor(tb testing.TB, ts ...tools.Tool) *executor.Executor {
	tb.Helper()
	reg := tools.NewRegistry()
	for _, t := range ts {
		if err := reg.Register(t); err != nil {
			tb.Fatal(err)
		}
	}
	dm, err := durable.New(durable.Config{Keys: []durable.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}})
	if err != nil {
		tb.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Registry: reg, Durable: dm, Outcomes: wire.Outcomes})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ex.Close() })
	return ex
}

type fixture struct {
	addr   string
	conn   *grpc.ClientConn
	rpc    ptcv1.RunnerServiceClient
	client *ptc.Client
	srv    *server.Server
}

// serve serves gs on a real loopback listener and returns a plaintext
// connection to it (with opts). At the end of the test the connection is
// closed and the server stopped; what the caller registered with
// tb.Cleanup before calling serve is cleaned up after that.
func serve(tb testing.TB, gs *grpc.Server, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		gs.Stop()
		<-done
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn.Close()
		gs.Stop()
		<-done
	})
	return conn
}

// start serves a runner with the demo tools on a real loopback listener.
func start(tb testing.TB) *fixture {
	tb.Helper()
	r := newExecutor(tb, demo.Tools()...)
	gs := grpc.NewServer()
	srv := server.New(r)
	ptcv1.RegisterRunnerServiceServer(gs, srv)
	testgrpc.RegisterTestServiceServer(gs, echoService{})
	conn := serve(tb, gs)
	return &fixture{addr: conn.Target(), conn: conn, rpc: ptcv1.NewRunnerServiceClient(conn), client: ptc.NewClient(conn), srv: srv}
}

func jsReq(src string) *ptcv1.ExecuteRequest {
	return &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: src}}
}

func TestExecuteExpenseOverGRPC(t *testing.T) {
	f := start(t)
	src, err := os.ReadFile("../../examples/expenses.js")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile("../../examples/expenses.expected.json")
	res, err := f.rpc.Execute(context.Background(), jsReq(string(src)))
	if err != nil {
		t.Fatal(err)
	}
	if res.GetError() != nil {
		t.Fatal(res.GetError())
	}
	var g, w any
	_ = json.Unmarshal([]byte(res.GetResultJson()), &g)
	_ = json.Unmarshal(want, &w)
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Fatalf("result %s", res.GetResultJson())
	}
	if res.GetStats().GetToolCalls() != 26 || len(res.GetTrace()) != 26 || res.GetEffectiveLimits().GetTimeout().AsDuration() == 0 {
		t.Fatalf("stats %v", res.GetStats())
	}
}

// TestLogLimitsOverGRPC: the log limits of a request reach the execution
// and come back as effective limits.
func TestLogLimitsOverGRPC(t *testing.T) {
	f := start(t)
	req := jsReq(`for (let i = 0; i < 10; i++) console.log("line " + i); return 1`)
	req.Limits = &ptcv1.Limits{MaxLogEntries: 3}
	res, err := f.rpc.Execute(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetLogs()) != 3 || !res.GetLogsTruncated() || res.GetEffectiveLimits().GetMaxLogEntries() != 3 {
		t.Fatalf("logs %v truncated %v effective %v", res.GetLogs(), res.GetLogsTruncated(), res.GetEffectiveLimits())
	}
}

func TestExecuteStatusCodes(t *testing.T) {
	f := start(t)
	cases := []struct {
		name string
		req  *ptcv1.ExecuteRequest
		code codes.Code
	}{
		{"no script", &ptcv1.ExecuteRequest{}, codes.InvalidArgument},
		{"no language", &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Source: "return 1"}}, codes.InvalidArgument},
		{"empty source", jsReq(""), codes.InvalidArgument},
		{"unknown language", &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: 42, Source: "return 1"}}, codes.InvalidArgument},
		{"bad input", func() *ptcv1.ExecuteRequest { r := jsReq("return 1"); r.InputJson = "{"; return r }(), codes.InvalidArgument},
		{"bad schema", func() *ptcv1.ExecuteRequest { r := jsReq("return 1"); r.ResultSchemaJson = "[1"; return r }(), codes.InvalidArgument},
		{"unknown tool", func() *ptcv1.ExecuteRequest { r := jsReq("return 1"); r.AllowedTools = []string{"x"}; return r }(), codes.InvalidArgument},
		{"negative duration", func() *ptcv1.ExecuteRequest {
			r := jsReq("return 1")
			r.Limits = &ptcv1.Limits{Timeout: durationpb.New(-time.Second)}
			return r
		}(), codes.InvalidArgument},
		{"invalid wasm", &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_WASM, WasmModule: []byte{0}}}, codes.InvalidArgument},
		{"unknown module hash", &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_WASM, ModuleSha256: strings.Repeat("0", 64)}}, codes.FailedPrecondition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.rpc.Execute(context.Background(), tc.req)
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.code)
			}
		})
	}
	// The service keeps serving.
	res, err := f.rpc.Execute(context.Background(), jsReq("return 7"))
	if err != nil || res.GetResultJson() != "7" {
		t.Fatal(err, res)
	}
}

func TestListTools(t *testing.T) {
	f := start(t)
	res, err := f.rpc.ListTools(context.Background(), &ptcv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetTools()) != 3 || res.GetTools()[0].GetName() != "get_budget_by_level" || res.GetTools()[0].GetInputSchemaJson() == "" {
		t.Fatalf("tools %v", res.GetTools())
	}
	if _, err := f.rpc.ListTools(context.Background(), &ptcv1.ListToolsRequest{Names: []string{"nope"}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unknown name: %v", err)
	}
	res, err = f.rpc.ListTools(context.Background(), &ptcv1.ListToolsRequest{Names: []string{"get_expenses"}})
	if err != nil || len(res.GetTools()) != 1 {
		t.Fatal(err, res)
	}
}

// clientTool is a client-served tool definition with a handler.
func clientTool(name, schema string, h tools.Handler) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: name, InputSchema: json.RawMessage(schema)}, Handler: h}
}

func TestSessionMixedTools(t *testing.T) {
	f := start(t)
	var calls atomic.Int32
	double := clientTool("crm.double", `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"],"additionalProperties":false}`,
		func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			calls.Add(1)
			var in struct{ N float64 }
			_ = json.Unmarshal(c.Arguments, &in)
			return json.Marshal(in.N * 2)
		})
	var logs []string
	res, err := f.client.Run(context.Background(), ptc.Request{
		Source: `const b = await tools.get_budget_by_level({level: "mid"});
console.log("limit", b.travel_limit);
const d = await tools.crm.double({n: b.travel_limit});
try { await tools.crm.double({n: "x"}) } catch (e) { return {d, code: e.code} }`,
		OnLog: func(e ptc.LogEntry) { logs = append(logs, e.Message) },
	}, double)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if string(res.Result) != `{"d":4000,"code":"invalid_arguments"}` {
		t.Fatalf("result %s", res.Result)
	}
	if calls.Load() != 1 {
		t.Fatalf("client handler ran %d times; the invalid call must never reach it", calls.Load())
	}
	if len(res.Trace) != 3 || res.Trace[1].Tool != "crm.double" || !res.Trace[1].OK || res.Trace[2].ErrorCode != "invalid_arguments" {
		t.Fatalf("trace %+v", res.Trace)
	}
	if len(logs) != 1 || logs[0] != "limit 2000" {
		t.Fatalf("live logs %q", logs)
	}
}

// TestSessionManyOutOfOrder answers 100 concurrent calls in reverse order:
// the handler of call i waits until call i+1 has been answered.
func TestSessionManyOutOfOrder(t *testing.T) {
	f := start(t)
	const n = 100
	gates := make([]chan struct{}, n+1)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	close(gates[n])
	h := func(ctx context.Context, c tools.Call) (json.RawMessage, error) {
		var in struct{ I int }
		_ = json.Unmarshal(c.Arguments, &in)
		select {
		case <-gates[in.I+1]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer close(gates[in.I])
		return json.Marshal(in.I * 10)
	}
	res, err := f.client.Run(context.Background(), ptc.Request{
		Source: fmt.Sprintf(`const r = await Promise.all(Array.from({length: %d}, (_, i) => tools.slow({i}))); return r.reduce((a, b) => a + b, 0)`, n),
		Limits: ptc.Limits{MaxConcurrentToolCalls: n, Timeout: time.Minute},
	}, clientTool("slow", `{"type":"object"}`, h))
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if string(res.Result) != fmt.Sprint(10*n*(n-1)/2) {
		t.Fatalf("result %s", res.Result)
	}
}

func TestSessionClientError(t *testing.T) {
	f := start(t)
	res, err := f.client.Run(context.Background(), ptc.Request{Source: `
try { await tools.pay({}) } catch (e) { return [e.name, e.code, e.message] }`},
		clientTool("pay", `{"type":"object"}`, func(context.Context, tools.Call) (json.RawMessage, error) {
			return nil, &tools.Error{Code: "card_declined", Message: "the card was declined"}
		}),
		clientTool("unused", `{"type":"object"}`, func(context.Context, tools.Call) (json.RawMessage, error) { panic("never") }))
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	if string(res.Result) != `["ToolError","card_declined","the card was declined"]` {
		t.Fatalf("result %s", res.Result)
	}
	// A panicking client handler becomes a tool error.
	res, err = f.client.Run(context.Background(), ptc.Request{Source: `try { await tools.p({}) } catch (e) { return e.code }`},
		clientTool("p", `{"type":"object"}`, func(context.Context, tools.Call) (json.RawMessage, error) { panic("boom") }))
	if err != nil || res.Error != nil || string(res.Result) != `"tool_panic"` {
		t.Fatal(err, res)
	}
}

func TestSessionTimeoutWaitingOnClient(t *testing.T) {
	f := start(t)
	res, err := f.client.Run(context.Background(), ptc.Request{Source: `await tools.hang({})`, Limits: ptc.Limits{Timeout: 100 * time.Millisecond}},
		clientTool("hang", `{"type":"object"}`, func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != ptc.KindTimeout {
		t.Fatalf("error %v", res.Error)
	}
}

func TestSessionInvalidSchema(t *testing.T) {
	f := start(t)
	_, err := f.client.Run(context.Background(), ptc.Request{Source: `return 1`},
		clientTool("bad", `{"type": 12}`, func(context.Context, tools.Call) (json.RawMessage, error) { return nil, nil }))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("err %v", err)
	}
	_, err = f.client.Run(context.Background(), ptc.Request{Source: `return 1`},
		clientTool("get_expenses", `{}`, func(context.Context, tools.Call) (json.RawMessage, error) { return nil, nil }))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "collides") {
		t.Fatalf("err %v", err)
	}
}

func startMsg(src string, defs ...*ptcv1.ToolDefinition) *ptcv1.SessionRequest {
	return &ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: jsReq(src), ClientTools: defs}}}
}

func TestSessionProtocolMisuse(t *testing.T) {
	f := start(t)
	ctx := context.Background()

	t.Run("no start", func(t *testing.T) {
		s, _ := f.rpc.Session(ctx)
		_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Cancel{Cancel: &ptcv1.CancelExecution{}}})
		_, err := s.Recv()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "first message") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("closed before start", func(t *testing.T) {
		s, _ := f.rpc.Session(ctx)
		_ = s.CloseSend()
		if _, err := s.Recv(); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("double start", func(t *testing.T) {
		s, _ := f.rpc.Session(ctx)
		_ = s.Send(startMsg(`await tools.c({})`, &ptcv1.ToolDefinition{Name: "c"}))
		if m, err := s.Recv(); err != nil || m.GetToolCall() == nil {
			t.Fatal(m, err)
		}
		_ = s.Send(startMsg(`return 1`))
		for {
			_, err := s.Recv()
			if err != nil {
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "exactly one start") {
					t.Fatalf("err %v", err)
				}
				return
			}
		}
	})
	t.Run("unknown and repeated call_id", func(t *testing.T) {
		s, _ := f.rpc.Session(ctx)
		_ = s.Send(startMsg(`const a = await tools.c({}); return a`, &ptcv1.ToolDefinition{Name: "c"}))
		m, err := s.Recv()
		if err != nil || m.GetToolCall() == nil {
			t.Fatal(m, err)
		}
		id := m.GetToolCall().GetCallId()
		if m.GetToolCall().GetIdempotencyKey() == "" || m.GetToolCall().GetDeadline() == nil {
			t.Fatalf("tool call %v", m.GetToolCall())
		}
		_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: "nope", Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: "1"}}}})
		m, err = s.Recv()
		if err != nil || !strings.Contains(m.GetProtocolError().GetMessage(), "unknown call_id") {
			t.Fatal(m, err)
		}
		_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: id, Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `"ok"`}}}})
		_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: id, Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `"again"`}}}})
		var result *ptcv1.ExecuteResponse
		sawRepeat := false
		for {
			m, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if pe := m.GetProtocolError(); pe != nil && strings.Contains(pe.GetMessage(), "already answered") {
				sawRepeat = true
			}
			if r := m.GetResult(); r != nil {
				result = r
			}
		}
		if result == nil || result.GetResultJson() != `"ok"` {
			t.Fatalf("result %v", result)
		}
		// The repeated answer may race with the end of the execution; when
		// it is read first it must be reported as repeated.
		_ = sawRepeat
	})
	t.Run("cancel message", func(t *testing.T) {
		s, _ := f.rpc.Session(ctx)
		_ = s.Send(startMsg(`await tools.c({})`, &ptcv1.ToolDefinition{Name: "c"}))
		if m, err := s.Recv(); err != nil || m.GetToolCall() == nil {
			t.Fatal(m, err)
		}
		_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Cancel{Cancel: &ptcv1.CancelExecution{Reason: "user stopped"}}})
		m, err := s.Recv()
		if err != nil || m.GetResult().GetError().GetKind() != ptcv1.ErrorKind_ERROR_KIND_CANCELLED {
			t.Fatal(m, err)
		}
	})
	t.Run("half close fails pending calls", func(t *testing.T) {
		s, _ := f.rpc.Session(ctx)
		_ = s.Send(startMsg(`try { await tools.c({}) } catch (e) { return e.code }`, &ptcv1.ToolDefinition{Name: "c"}))
		if m, err := s.Recv(); err != nil || m.GetToolCall() == nil {
			t.Fatal(m, err)
		}
		_ = s.CloseSend()
		m, err := s.Recv()
		if err != nil || m.GetResult().GetResultJson() != `"cancelled"` {
			t.Fatal(m, err)
		}
	})
}

// TestSessionDisconnectFreesEverything: a client that goes away mid-call
// ends the execution at once and leaves no goroutine behind (checked by
// goleak in TestMain and by the server's in-flight count).
func TestSessionDisconnectFreesEverything(t *testing.T) {
	f := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := f.rpc.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Send(startMsg(`await tools.c({}); for (;;) {}`, &ptcv1.ToolDefinition{Name: "c"}))
	if m, err := s.Recv(); err != nil || m.GetToolCall() == nil {
		t.Fatal(m, err)
	}
	if f.srv.InFlight() != 1 {
		t.Fatalf("in flight %d", f.srv.InFlight())
	}
	cancel()
	for f.srv.InFlight() != 0 {
		// The server notices the reset asynchronously; poll the count
		// (bounded by the test timeout), yielding the processor.
		<-time.After(time.Millisecond)
	}
}

func TestListToolsForModels(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	res, err := f.rpc.ListTools(ctx, &ptcv1.ListToolsRequest{Query: "travel budget for a job level", Limit: 2, IncludeTypescript: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetTools()) == 0 || res.GetTools()[0].GetName() != "get_budget_by_level" || len(res.GetMatches()) != len(res.GetTools()) {
		t.Fatalf("ranked %v / %v", res.GetTools(), res.GetMatches())
	}
	if !strings.Contains(res.GetTypescript(), "declare const tools") || !strings.Contains(res.GetTypescript(), "get_budget_by_level(") {
		t.Fatalf("typescript:\n%s", res.GetTypescript())
	}
	selected := map[string]bool{}
	for _, d := range res.GetTools() {
		selected[d.GetName()] = true
	}
	for _, n := range []string{"get_budget_by_level", "get_team_members", "get_expenses"} {
		if strings.Contains(res.GetTypescript(), n+"(") != selected[n] {
			t.Fatalf("declaration of %s present=%v, selected=%v", n, !selected[n], selected[n])
		}
	}
	if !strings.Contains(res.GetPrompt(), "return") || res.GetApproxTokens() <= 0 {
		t.Fatalf("prompt %q tokens %d", res.GetPrompt(), res.GetApproxTokens())
	}
	all, _ := f.rpc.ListTools(ctx, &ptcv1.ListToolsRequest{IncludeTypescript: true})
	if all.GetApproxTokens() <= res.GetApproxTokens() {
		t.Fatalf("tokens: all %d, selected %d", all.GetApproxTokens(), res.GetApproxTokens())
	}
	if _, err := f.rpc.ListTools(ctx, &ptcv1.ListToolsRequest{Limit: -1}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("negative limit: %v", err)
	}
}

// TestClientListToolsEveryFeature: the Go client reaches every feature of
// ListTools — query, limit, names, TypeScript, prompt, token estimate and
// scores — and answers as the in-process Runner does.
func TestClientListToolsEveryFeature(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	q := ptc.ToolQuery{Query: "travel budget for a job level", Limit: 2, TypeScript: true}
	l, err := f.client.ListTools(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tools) == 0 || len(l.Tools) > 2 || l.Tools[0].Name != "get_budget_by_level" || len(l.Scores) != len(l.Tools) || l.Scores[0] <= 0 {
		t.Fatalf("ranked %v scores %v", l.Tools, l.Scores)
	}
	if !strings.Contains(l.TypeScript, "get_budget_by_level(") || !strings.Contains(l.Prompt, "return") || l.ApproxTokens <= 0 {
		t.Fatalf("typescript %q prompt %q tokens %d", l.TypeScript, l.Prompt, l.ApproxTokens)
	}
	named, err := f.client.ListTools(ctx, ptc.ToolQuery{Names: []string{"get_expenses"}})
	if err != nil || len(named.Tools) != 1 || named.Tools[0].Name != "get_expenses" || len(named.Scores) != 0 {
		t.Fatal(err, named)
	}
	if _, err := f.client.ListTools(ctx, ptc.ToolQuery{Names: []string{"nope"}}); ptc.CodeOf(err) != ptc.InvalidArgument {
		t.Fatalf("unknown name: %v", err)
	}
	all, err := f.client.Tools(ctx)
	if err != nil || len(all) != 3 {
		t.Fatal(err, all)
	}
	r, err := ptc.NewRunner(ptc.WithTools(demo.Tools()...))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	local, err := r.ListTools(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if local.TypeScript != l.TypeScript || local.Prompt != l.Prompt || local.ApproxTokens != l.ApproxTokens || len(local.Tools) != len(l.Tools) {
		t.Fatalf("the Runner answers otherwise:\n%+v\n%+v", local, l)
	}
}

// TestClientErrors: a request the server refuses comes back from the Go
// client as a *ptc.Error with the status code, as the Runner reports it;
// the caller's own cancel keeps context.Canceled in the chain.
func TestClientErrors(t *testing.T) {
	f := start(t)
	_, err := f.client.Execute(context.Background(), ptc.Request{ExecutionID: "../../x", Source: "return 1"})
	var pe *ptc.Error
	if !errors.As(err, &pe) || pe.Code != ptc.InvalidArgument || ptc.CodeOf(err) != ptc.InvalidArgument ||
		!strings.Contains(pe.Message, "execution_id") || !errors.Is(err, &ptc.Error{Code: ptc.InvalidArgument}) {
		t.Fatalf("err %#v", err)
	}
	r, rerr := ptc.NewRunner()
	if rerr != nil {
		t.Fatal(rerr)
	}
	defer r.Close()
	_, lerr := r.Execute(context.Background(), ptc.Request{ExecutionID: "../../x", Source: "return 1"})
	if ptc.CodeOf(lerr) != ptc.CodeOf(err) || lerr.Error() != err.Error() {
		t.Fatalf("Runner %v, Client %v", lerr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.client.Execute(ctx, ptc.Request{Source: "return 1"})
	if ptc.CodeOf(err) != ptc.Canceled || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %#v", err)
	}
	if _, err := f.client.Run(context.Background(), ptc.Request{Language: 9, Source: "return 1"}); ptc.CodeOf(err) != ptc.InvalidArgument {
		t.Fatalf("Run: %v", err)
	}
}
