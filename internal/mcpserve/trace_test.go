package mcpserve_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// tracedServer is an MCP server over ptc's server with admission control,
// every span recorded in rec.
func tracedServer(t *testing.T, rec *tracetest.SpanRecorder) *mcpserve.Server {
	t.Helper()
	tr := telemetry.Tracing{Provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), Propagator: propagation.TraceContext{}}
	reg := tools.NewRegistry()
	if err := reg.Register(demo.Tools()...); err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Registry: reg, Tracing: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Close() })
	adm, err := admission.New(admission.Config{MaxConcurrent: 2, MaxQueue: 2, MaxWait: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	return mcpserve.New(mcpserve.Config{Backend: server.New(ex, server.WithAdmission(adm), server.WithTracing(tr)), Tracing: tr})
}

// traceHeader adds a traceparent header to every request.
type traceHeader struct{ traceparent string }

func (h traceHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tokenB)
	if h.traceparent != "" {
		r.Header.Set("traceparent", h.traceparent)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// The callers' spans: one sent in an HTTP header, one in params._meta.
const (
	headerTrace = "0af7651916cd43dd8448eb211c80319c"
	headerSpan  = "b7ad6b7169203331"
	metaTrace   = "4bf92f3577b34da6a3ce929d0e0e4736"
	metaSpan    = "00f067aa0ba902b7"
)

func traceparent(traceID, spanID string) string { return "00-" + traceID + "-" + spanID + "-01" }

// TestMCPSpanTree: a tools/call of execute is one trace under a SERVER
// span "tools/call execute" (MCP semantic conventions: mcp.method.name,
// gen_ai.operation.name execute_tool, gen_ai.tool.name, jsonrpc.request.id,
// mcp.session.id, mcp.protocol.version, network.transport), with the
// admission wait and the execution's ptc.execute span beneath it and the
// tool-call spans beneath that. The caller's trace context is the parent:
// params._meta.traceparent, else the HTTP traceparent header (a link to
// the header's when both differ), over HTTP and stdio; without one the
// SERVER span is a root.
func TestMCPSpanTree(t *testing.T) {
	cases := []struct {
		name        string
		stdio       bool
		header      string // traceparent header
		meta        string // params._meta.traceparent
		wantTrace   string // "" = a new trace
		wantParent  string
		wantLink    bool
		wantSession bool
	}{
		{name: "http header", header: traceparent(headerTrace, headerSpan), wantTrace: headerTrace, wantParent: headerSpan, wantSession: true},
		{name: "http _meta", meta: traceparent(metaTrace, metaSpan), wantTrace: metaTrace, wantParent: metaSpan, wantSession: true},
		{name: "http both", header: traceparent(headerTrace, headerSpan), meta: traceparent(metaTrace, metaSpan), wantTrace: metaTrace, wantParent: metaSpan, wantLink: true, wantSession: true},
		{name: "http none", wantSession: true},
		{name: "stdio _meta", stdio: true, meta: traceparent(metaTrace, metaSpan), wantTrace: metaTrace, wantParent: metaSpan},
		{name: "stdio none", stdio: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			s := tracedServer(t, rec)
			var cs *sdk.ClientSession
			if tc.stdio {
				cs = connect(t, s, nil)
			} else {
				srv := httptest.NewServer(s.Handler(mcpserve.HTTPConfig{Authenticate: startLimitedAuth(t)}))
				t.Cleanup(srv.Close)
				t.Cleanup(s.CloseSessions)
				var err error
				cs, err = sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
					&sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: traceHeader{tc.header}}, MaxRetries: -1}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = cs.Close() })
			}
			params := &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{
				"code": `const m = await tools.get_team_members({department: "sales"}); return m.length;`}}
			if tc.meta != "" {
				params.Meta = sdk.Meta{"traceparent": tc.meta}
			}
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				t.Fatalf("execute: %v %s", err, text(res))
			}

			byName := map[string]sdktrace.ReadOnlySpan{}
			for _, sp := range rec.Ended() {
				byName[sp.Name()] = sp
			}
			root := byName["tools/call execute"]
			if root == nil {
				t.Fatalf("no span tools/call execute among %v", names(rec))
			}
			if root.SpanKind() != trace.SpanKindServer {
				t.Fatalf("tools/call execute is a %v span", root.SpanKind())
			}
			tid := root.SpanContext().TraceID().String()
			switch {
			case tc.wantTrace != "" && (tid != tc.wantTrace || root.Parent().SpanID().String() != tc.wantParent || !root.Parent().IsRemote()):
				t.Fatalf("tools/call execute is in trace %s under %s, want %s under %s", tid, root.Parent().SpanID(), tc.wantTrace, tc.wantParent)
			case tc.wantTrace == "" && root.Parent().IsValid():
				t.Fatalf("tools/call execute has the parent %s, want none", root.Parent().SpanID())
			case tc.wantLink != (len(root.Links()) == 1 && root.Links()[0].SpanContext.SpanID().String() == headerSpan):
				t.Fatalf("links %v, want the header's: %v", root.Links(), tc.wantLink)
			}
			a := attrsOf(root)
			want := map[string]string{"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "execute",
				"mcp.protocol.version": a["mcp.protocol.version"], "ptc.outcome": "ok", "network.transport": "pipe"}
			if !tc.stdio {
				want["network.transport"] = "tcp"
				want["mcp.session.id"] = cs.ID()
				want["ptc.tenant"] = "b"
			}
			for k, v := range want {
				if a[k] != v || v == "" && k == "mcp.protocol.version" {
					t.Errorf("tools/call execute: %s = %q, want %q (all: %v)", k, a[k], v, a)
				}
			}
			if a["jsonrpc.request.id"] == "" || a["ptc.execution.id"] == "" {
				t.Errorf("tools/call execute: no jsonrpc.request.id or ptc.execution.id: %v", a)
			}
			// The tree: admission and execution under the request, the
			// tool call under the execution, one trace.
			for child, parent := range map[string]string{"ptc.admission": "tools/call execute", "ptc.execute": "tools/call execute", "execute_tool get_team_members": "ptc.execute"} {
				c, p := byName[child], byName[parent]
				if c == nil || p == nil {
					t.Fatalf("no span %s or %s among %v", child, parent, names(rec))
				}
				if c.Parent().SpanID() != p.SpanContext().SpanID() || c.SpanContext().TraceID().String() != tid {
					t.Errorf("%s is under %s in trace %s, want under %s in %s", child, c.Parent().SpanID(), c.SpanContext().TraceID(), parent, tid)
				}
			}
			if tool := attrsOf(byName["execute_tool get_team_members"]); tool["gen_ai.tool.name"] != "get_team_members" || tool["gen_ai.operation.name"] != "execute_tool" ||
				tool["gen_ai.tool.type"] != "extension" || !strings.HasPrefix(tool["gen_ai.tool.description"], "List the members of a department") {
				t.Errorf("the tool call's span: %v", tool)
			}
		})
	}
}

// names lists the ended spans' names.
func names(rec *tracetest.SpanRecorder) []string {
	var out []string
	for _, s := range rec.Ended() {
		out = append(out, fmt.Sprintf("%s(%s)", s.Name(), s.SpanContext().SpanID()))
	}
	return out
}

// attrsOf returns a span's attributes as text.
func attrsOf(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, a := range s.Attributes() {
		out[string(a.Key)] = a.Value.Emit()
	}
	return out
}

// TestMCPSpanErrors: a tools/call whose result is isError has error.type
// tool_error; a request answered with a JSON-RPC error has its code as
// error.type and rpc.response.status_code, and a tool name ptc does not
// serve does not become a span name.
func TestMCPSpanErrors(t *testing.T) {
	cases := []struct {
		name, tool string
		args       map[string]any
		span       string
		errType    string
	}{
		{"a program that fails", "execute", map[string]any{"code": `throw new Error("no")`}, "tools/call execute", "tool_error"},
		{"arguments that cannot run", "execute", map[string]any{"code": 5}, "tools/call execute", "tool_error"},
		{"an unknown tool", "made_up_tool", map[string]any{}, "tools/call unknown", "-32602"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			cs := connect(t, tracedServer(t, rec), nil)
			_, _ = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			var found sdktrace.ReadOnlySpan
			for _, sp := range rec.Ended() {
				if sp.Name() == tc.span {
					found = sp
				}
			}
			if found == nil {
				t.Fatalf("no span %s among %v", tc.span, names(rec))
			}
			a := attrsOf(found)
			if a["error.type"] != tc.errType || found.Status().Description != tc.errType || tc.errType != "tool_error" && a["rpc.response.status_code"] != tc.errType {
				t.Fatalf("%s: %v, status %v", tc.span, a, found.Status())
			}
		})
	}
}
