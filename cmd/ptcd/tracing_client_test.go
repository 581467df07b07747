package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/telemetry/otlptest"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// askUser is the client tool of the tests below.
var askUser = tools.Definition{Name: "ask_user", InputSchema: json.RawMessage(`{"type":"object"}`)}

// sessionToolCall runs a script calling ask_user over a raw Session
// stream, answers the call, and returns the ToolCall the server sent.
func sessionToolCall(t *testing.T, ctx context.Context, addr string) *ptcv1.ToolCall {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := ptcv1.NewRunnerServiceClient(conn).Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := &ptcv1.SessionStart{Execute: &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: `return await tools.ask_user({q: "which?"})`}},
		ClientTools: []*ptcv1.ToolDefinition{{Name: askUser.Name, InputSchemaJson: string(askUser.InputSchema)}}}
	if err := stream.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: start}}); err != nil {
		t.Fatal(err)
	}
	var call *ptcv1.ToolCall
	for {
		m, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch msg := m.GetMsg().(type) {
		case *ptcv1.SessionResponse_ToolCall:
			call = msg.ToolCall
			res := &ptcv1.ToolResult{CallId: call.GetCallId(), Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `"this one"`}}
			if err := stream.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: res}}); err != nil {
				t.Fatal(err)
			}
		case *ptcv1.SessionResponse_Result:
			if e := msg.Result.GetError(); e != nil || msg.Result.GetResultJson() != `"this one"` || call == nil {
				t.Fatalf("result %v, call %v", msg.Result, call)
			}
			return call
		}
	}
}

// toolSpan finds the span named by a W3C traceparent.
func toolSpan(t *testing.T, spans []otlptest.Span, traceparent string) otlptest.Span {
	t.Helper()
	parts := strings.Split(traceparent, "-")
	if len(parts) != 4 || parts[0] != "00" || parts[3] != "01" {
		t.Fatalf("traceparent %q is not a sampled W3C trace context", traceparent)
	}
	for _, s := range spans {
		if s.TraceID == parts[1] && s.SpanID == parts[2] {
			return s
		}
	}
	t.Fatalf("no span was exported for traceparent %s", traceparent)
	return otlptest.Span{}
}

// TestTracingReachesClientTools: a caller serving a client tool gets the
// W3C trace context of the call's execute_tool span, under both
// isolations — in the Session's ToolCall, in the context of a Go client's
// handler, and in the PendingAction of a resumable execution (whose span
// ends at the pause, outcome "paused", where the engine stops there; with
// the answer where it stays parked in process). A trace that is not sampled gives
// no trace context.
func TestTracingReachesClientTools(t *testing.T) {
	t.Setenv("PTC_TEST_DURABLE_K1", strings.TrimPrefix(durableEnv, "PTC_TEST_DURABLE_K1="))
	for _, mode := range []string{"worker", "inprocess"} {
		t.Run(mode, func(t *testing.T) {
			recv := otlptest.Start(t)
			cfg := writeFile(t, "ptcd.yaml", durableConfig)
			addr, stop, logs := startPtcd(t, "--config", cfg, "--workers.mode", mode, "--workers.insecure-inprocess="+fmt.Sprint(mode == "inprocess"), "--workers.idle", "1",
				"--tracing.endpoint", recv.Addr, "--tracing.insecure=true")
			ctx, caller := callerContext(t)

			// A raw Session: the ToolCall's fields.
			tc := sessionToolCall(t, ctx, addr)

			// The Go client: the handler's context.
			c := dialClient(t, addr)
			var mu sync.Mutex
			var handled trace.SpanContext
			h := func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
				mu.Lock()
				handled = trace.SpanContextFromContext(ctx)
				mu.Unlock()
				return json.RawMessage(`"that one"`), nil
			}
			res, err := c.Run(ctx, ptc.Request{Source: `return await tools.ask_user({q: "which?"})`}, tools.Tool{Definition: askUser, Handler: h})
			if err != nil || res.Error != nil || string(res.Result) != `"that one"` {
				t.Fatal(err, res)
			}

			// A resumable execution: the pending action's fields.
			paused, err := c.Execute(ctx, ptc.Request{Source: `return await tools.ask_user({q: "which?"})`, Resumable: true,
				ClientTools: []tools.Tool{{Definition: askUser}}})
			if err != nil || len(paused.Pending) != 1 {
				t.Fatal(err, paused)
			}
			pending := paused.Pending[0]
			done, err := c.Resume(ctx, paused.Continuation, ptc.Answer{CallID: pending.CallID, Output: json.RawMessage(`"the last"`)})
			if err != nil || done.Error != nil || string(done.Result) != `"the last"` {
				t.Fatal(err, done)
			}

			// A caller whose trace is not sampled.
			unsampled := metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-"+caller.TraceID().String()+"-00f067aa0ba902b7-00")
			if tc := sessionToolCall(t, unsampled, addr); tc.GetTraceparent() != "" || tc.GetTracestate() != "" {
				t.Errorf("unsampled trace: traceparent %q tracestate %q", tc.GetTraceparent(), tc.GetTracestate())
			}

			if code := stop(); code != 0 { // flushes the spans
				t.Fatalf("exit %d: %s", code, logs.String())
			}
			spans := recv.Spans()
			s := toolSpan(t, spans, tc.GetTraceparent())
			if s.Name != "execute_tool ask_user" || s.TraceID != caller.TraceID().String() || s.Attrs["ptc.tool.client"] != "true" ||
				s.Attrs["gen_ai.tool.call.id"] != tc.GetIdempotencyKey() || s.Attrs["ptc.tool.outcome"] != "ok" || tc.GetTracestate() != "" {
				t.Errorf("the Session ToolCall's traceparent %s names span %+v", tc.GetTraceparent(), s)
			}
			mu.Lock()
			got := handled
			mu.Unlock()
			if !got.IsRemote() || !got.IsSampled() || got.TraceID() != caller.TraceID() {
				t.Fatalf("the handler's span context %+v", got)
			}
			s = toolSpan(t, spans, "00-"+got.TraceID().String()+"-"+got.SpanID().String()+"-01")
			if s.Name != "execute_tool ask_user" || s.Attrs["ptc.tool.outcome"] != "ok" {
				t.Errorf("the handler's parent is span %+v", s)
			}
			// In worker processes the engine stops at the pause (the
			// resume re-runs it), and the call's span ends then; in process
			// it stays parked, and the span ends with the call's answer.
			outcome := "paused"
			if mode == "inprocess" {
				outcome = "ok"
			}
			s = toolSpan(t, spans, pending.Traceparent)
			if s.Name != "execute_tool ask_user" || s.TraceID != caller.TraceID().String() || s.StatusError ||
				s.Attrs["ptc.tool.outcome"] != outcome || s.Attrs["gen_ai.tool.call.id"] != pending.IdempotencyKey {
				t.Errorf("the pending action's traceparent %s names span %+v", pending.Traceparent, s)
			}
		})
	}
}

// TestNoTraceContextWithoutTracing: with tracing off, a client tool call
// carries no trace context, even when the caller sent one.
func TestNoTraceContextWithoutTracing(t *testing.T) {
	addr, _, _ := startPtcd(t, "--workers.mode", "inprocess", "--workers.insecure-inprocess")
	ctx, _ := callerContext(t)
	if tc := sessionToolCall(t, ctx, addr); tc.GetTraceparent() != "" || tc.GetTracestate() != "" {
		t.Fatalf("traceparent %q tracestate %q with tracing off", tc.GetTraceparent(), tc.GetTracestate())
	}
}
