package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
