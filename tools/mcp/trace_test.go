package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ptcrun/ptc/tools"
)

// TestTraceContextReachesTheServer: the server of a traced call receives
// the call's W3C trace context in _meta (over stdio-like transports and
// HTTP) and in the HTTP headers, and the call is a client span, child of
// the caller's; a call outside any trace starts its own.
func TestTraceContextReachesTheServer(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	prop := propagation.TraceContext{}

	f := newFakeServer()
	var mu sync.Mutex
	var headers []string
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			headers = append(headers, r.Header.Get("traceparent"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	tr, _ := f.inMemory(t)

	for _, cfg := range []Config{
		{Name: "mem", transport: tr, Required: true, TracerProvider: tp, Propagator: prop},
		{Name: "web", URL: hs.URL, HTTPClient: client, Required: true, TracerProvider: tp, Propagator: prop},
	} {
		t.Run(cfg.Name, func(t *testing.T) {
			s := startSource(t, cfg)
			f.mu.Lock()
			f.meta = nil
			f.mu.Unlock()
			mu.Lock()
			headers = nil
			mu.Unlock()
			ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool "+cfg.Name+".echo")
			_, err := find(t, s, cfg.Name+".echo").Handler(ctx, tools.Call{IdempotencyKey: "ex/1", Arguments: json.RawMessage(`{"secret":"v"}`)})
			parent.End()
			if err != nil {
				t.Fatal(err)
			}
			// A call outside any trace.
			if _, err := find(t, s, cfg.Name+".echo").Handler(context.Background(), tools.Call{}); err != nil {
				t.Fatal(err)
			}
			traceID := parent.SpanContext().TraceID().String()
			f.mu.Lock()
			meta := f.meta
			f.mu.Unlock()
			if len(meta) != 2 {
				t.Fatalf("meta %v", meta)
			}
			tp0, _ := meta[0]["traceparent"].(string)
			if !strings.HasPrefix(tp0, "00-"+traceID+"-") || meta[0][MetaIdempotencyKey] != "ex/1" {
				t.Fatalf("_meta of the traced call: %v (trace %s)", meta[0], traceID)
			}
			if tp1, _ := meta[1]["traceparent"].(string); strings.Contains(tp1, traceID) {
				t.Fatalf("_meta of the call outside the trace: %v", meta[1])
			}
			var span sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "tools/call echo" && s.Parent().SpanID() == parent.SpanContext().SpanID() {
					span = s
				}
			}
			if span == nil || span.SpanKind().String() != "client" || !strings.Contains(tp0, span.SpanContext().SpanID().String()) {
				t.Fatalf("tools/call span %v", span)
			}
			for _, a := range span.Attributes() {
				if strings.Contains(a.Value.Emit(), "secret") {
					t.Fatalf("argument value in the span: %v", a)
				}
			}
			if cfg.URL != "" {
				mu.Lock()
				defer mu.Unlock()
				traced := 0
				for _, h := range headers {
					if strings.HasPrefix(h, "00-"+traceID+"-") {
						traced++
					}
				}
				if traced != 1 {
					t.Fatalf("traceparent headers %q, want one in trace %s", headers, traceID)
				}
			}
		})
	}
}

// TestCallSpanAttributes: over an in-memory pipe and streamable HTTP, the
// client span of a tools/call carries the MCP attributes of the semantic
// conventions (method, JSON-RPC request id, session id over HTTP, protocol
// version, transport), and error.type says how a failing call ended: the
// tool's isError, or the JSON-RPC error code the server answered.
func TestCallSpanAttributes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	f := newFakeServer()
	f.add("fails", func(json.RawMessage) *sdk.CallToolResult {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no"}}}
	})
	f.srv.AddTool(&sdk.Tool{Name: "refuses", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32042, Message: "refused"}
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.srv }, nil)
	// Closed after the sources, which the tests' cleanups close.
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	tr, _ := f.inMemory(t)

	for _, cfg := range []Config{
		{Name: "mem", transport: tr, Required: true, TracerProvider: tp},
		{Name: "web", URL: hs.URL, HTTPClient: client, Required: true, TracerProvider: tp},
	} {
		s := startSource(t, cfg)
		for _, tc := range []struct {
			tool    string
			errType string
			rpcCode string
		}{
			{"echo", "", ""},
			{"fails", CodeToolError, ""},
			{"refuses", "-32042", "-32042"},
		} {
			t.Run(cfg.Name+"/"+tc.tool, func(t *testing.T) {
				ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool")
				_, _ = find(t, s, cfg.Name+"."+tc.tool).Handler(ctx, tools.Call{Arguments: json.RawMessage(`{}`)})
				parent.End()
				var span sdktrace.ReadOnlySpan
				for _, sp := range rec.Ended() {
					if sp.Parent().SpanID() == parent.SpanContext().SpanID() && sp.Name() == "tools/call "+tc.tool {
						span = sp
					}
				}
				if span == nil {
					t.Fatal("no tools/call span")
				}
				got := map[string]string{}
				for _, a := range span.Attributes() {
					got[string(a.Key)] = a.Value.Emit()
				}
				s.mu.Lock()
				sess := s.session
				s.mu.Unlock()
				transport, session := "pipe", ""
				if cfg.URL != "" {
					transport, session = "tcp", sess.ID()
				}
				want := map[string]string{
					"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tc.tool,
					"ptc.tool": cfg.Name + "." + tc.tool, "ptc.tool_source": cfg.Name, "network.transport": transport,
					"mcp.protocol.version": sess.InitializeResult().ProtocolVersion,
					"jsonrpc.request.id":   got["jsonrpc.request.id"],
				}
				if session != "" {
					want["mcp.session.id"] = session
				}
				if tc.errType != "" {
					want["error.type"] = tc.errType
				}
				if tc.rpcCode != "" {
					want["rpc.response.status_code"] = tc.rpcCode
				}
				if _, err := strconv.Atoi(got["jsonrpc.request.id"]); err != nil || want["mcp.protocol.version"] == "" || !maps.Equal(got, want) {
					t.Fatalf("attributes\n%v\nwant\n%v", got, want)
				}
				if isErr := span.Status().Code == codes.Error; isErr != (tc.errType != "") {
					t.Fatalf("status %v", span.Status())
				}
			})
		}
	}
}

// TestEndSpanErrorType: each way a call can end gives its error.type.
func TestEndSpanErrorType(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	<-expired.Done()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		res  *sdk.CallToolResult
		err  error
		want string
	}{
		{"ok", context.Background(), &sdk.CallToolResult{}, nil, ""},
		{"tool error", context.Background(), &sdk.CallToolResult{IsError: true}, nil, CodeToolError},
		{"server's JSON-RPC error", context.Background(), nil, fmt.Errorf("calling: %w", &jsonrpc.Error{Code: -32602}), "-32602"},
		{"the SDK's own closing error", context.Background(), nil, &jsonrpc.Error{Code: -32004}, CodeUnavailable},
		{"broken connection", context.Background(), nil, errors.New("EOF"), CodeUnavailable},
		{"canceled", canceled, nil, context.Canceled, "canceled"},
		{"deadline", expired, nil, context.DeadlineExceeded, "deadline_exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			_, span := tp.Tracer("test").Start(context.Background(), "tools/call x")
			endSpan(tc.ctx, span, tc.res, tc.err)
			got := ""
			for _, a := range rec.Ended()[0].Attributes() {
				if a.Key == "error.type" {
					got = a.Value.Emit()
				}
			}
			if got != tc.want {
				t.Fatalf("error.type %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPeekRequest: the id and method are read from the members before
// params, whatever the id's JSON type.
func TestPeekRequest(t *testing.T) {
	for _, tc := range []struct{ body, id, method string }{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, "7", "tools/call"},
		{`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{}}`, "a-1", "tools/call"},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`, "", "notifications/cancelled"},
		{`{"params":{"id":9},"id":3,"method":"tools/call"}`, "", ""},
		{`[1]`, "", ""},
		{`not json`, "", ""},
	} {
		if id, method := peekRequest(strings.NewReader(tc.body)); id != tc.id || method != tc.method {
			t.Errorf("%s: id %q method %q, want %q %q", tc.body, id, method, tc.id, tc.method)
		}
	}
}
