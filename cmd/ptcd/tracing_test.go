package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/telemetry/otlptest"
	"github.com/ptcrun/ptc/internal/testenv"
)

// callerContext starts a span in the caller's own tracer and puts its W3C
// trace context into the outgoing gRPC metadata, as an instrumented caller
// does.
func callerContext(t *testing.T) (context.Context, trace.SpanContext) {
	t.Helper()
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("caller").Start(context.Background(), "agent turn")
	t.Cleanup(func() { span.End() })
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return metadata.AppendToOutgoingContext(ctx, "traceparent", carrier.Get("traceparent")), span.SpanContext()
}

// TestTracingSpanTree runs the expense example on a ptcd that exports to an
// OTLP receiver started here, under both isolations, and checks the whole
// span tree: the RPC (a child of the caller's span, from its W3C trace
// context), the admission wait, the execution, and one span per tool call
// under it (made by the supervisor for calls from a worker process). No
// span carries an argument or result value.
func TestTracingSpanTree(t *testing.T) {
	src, err := os.ReadFile("../../examples/expenses.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"worker", "inprocess"} {
		t.Run(mode, func(t *testing.T) {
			recv := otlptest.Start(t)
			addr, stop, logs := startPtcd(t, "--demo-tools", "--workers.mode", mode, "--workers.insecure-inprocess="+fmt.Sprint(mode == "inprocess"), "--workers.idle", "1",
				"--tracing.endpoint", recv.Addr, "--tracing.insecure=true")
			c, err := ptc.Dial(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, caller := callerContext(t)
			res, err := c.Execute(ctx, ptc.Request{Source: string(src)})
			if err != nil || res.Error != nil {
				t.Fatal(err, res.Error)
			}
			if code := stop(); code != 0 { // flushes the spans
				t.Fatalf("exit %d: %s", code, logs.String())
			}
			spans := recv.Spans()
			tree := otlptest.Tree(spans, caller.TraceID().String())
			want := "ptc.v1.RunnerService/Execute\n" +
				"  ptc.admission\n" +
				"  ptc.execute\n" +
				"    execute_tool get_budget_by_level ×5\n" +
				"    execute_tool get_expenses ×20\n" +
				"    execute_tool get_team_members\n"
			if tree != want {
				t.Fatalf("span tree\n%s\nwant\n%s", tree, want)
			}
			var rpc, exec otlptest.Span
			for _, s := range spans {
				switch s.Name {
				case "ptc.v1.RunnerService/Execute":
					rpc = s
				case "ptc.execute":
					exec = s
				}
				if s.Service != "ptcd" {
					t.Errorf("span %s of service %q", s.Name, s.Service)
				}
				for k, v := range s.Attrs {
					// A tool's description is its definition's text, not
					// a value of the call.
					if k != "gen_ai.tool.description" && (strings.Contains(v, "engineering") || strings.Contains(v, "travel")) {
						t.Errorf("span %s holds a value in %s=%q", s.Name, k, v)
					}
				}
				if strings.HasPrefix(s.Name, "execute_tool ") {
					if s.Attrs["gen_ai.tool.name"] == "" || s.Attrs["ptc.tool.outcome"] != "ok" || s.Attrs["ptc.tool.result_bytes"] == "" ||
						s.Attrs["ptc.tool.argument_bytes"] == "" || !strings.HasPrefix(s.Attrs["gen_ai.tool.call.id"], res.ExecutionID+"/") {
						t.Errorf("tool span %s: %v", s.Name, s.Attrs)
					}
				}
			}
			if rpc.ParentSpanID != caller.SpanID().String() {
				t.Errorf("the RPC span's parent is %s, want the caller's %s", rpc.ParentSpanID, caller.SpanID())
			}
			if exec.Attrs["ptc.isolation"] != mode || exec.Attrs["ptc.execution.id"] != res.ExecutionID ||
				exec.Attrs["ptc.tool_calls"] != "26" || exec.Attrs["ptc.outcome"] != "ok" || exec.Attrs["ptc.language"] != "javascript" ||
				exec.Attrs["ptc.output_bytes"] != fmt.Sprint(res.Stats.OutputBytes) {
				t.Errorf("execution span %v", exec.Attrs)
			}
			if rpc.Attrs["ptc.execution.id"] != res.ExecutionID {
				t.Errorf("RPC span %v", rpc.Attrs)
			}
		})
	}
}

// TestTracingReachesHTTPToolSource: an HTTP tool source receives the W3C
// trace context of the tool call that made the request (checked on the
// receiving side), and the request is a client span under the call's.
func TestTracingReachesHTTPToolSource(t *testing.T) {
	var mu sync.Mutex
	var got []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q}`, r.URL.Path)
	}))
	defer api.Close()
	recv := otlptest.Start(t)
	cfg := writeFile(t, "ptcd.yaml", fmt.Sprintf(`
tool_sources:
  - name: crm
    type: http
    tools:
      - name: get_customer
        url: %s/customers/{id}
        input_schema: {type: object, properties: {id: {type: string}}, required: [id]}
tracing:
  endpoint: %s
  insecure: true
`, api.URL, recv.Addr))
	addr, stop, logs := startPtcd(t, "--config", cfg, "--workers.mode", "inprocess", "--workers.insecure-inprocess")
	c, err := ptc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, caller := callerContext(t)
	res, err := c.Execute(ctx, ptc.Request{Source: `return await tools.crm.get_customer({id: "c-42"})`})
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0], "00-"+caller.TraceID().String()+"-") {
		t.Fatalf("traceparent received %q, want trace %s", got, caller.TraceID())
	}
	tree := otlptest.Tree(recv.Spans(), caller.TraceID().String())
	want := "ptc.v1.RunnerService/Execute\n  ptc.admission\n  ptc.execute\n    execute_tool crm.get_customer\n      GET /customers/{id}\n"
	if tree != want {
		t.Fatalf("span tree\n%s\nwant\n%s", tree, want)
	}
	for _, s := range recv.Spans() {
		if s.Name == "GET /customers/{id}" {
			if !strings.Contains(got[0], s.SpanID) || s.Attrs["http.response.status_code"] != "200" || s.Attrs["url.template"] != "/customers/{id}" {
				t.Fatalf("request span %+v (header %s)", s, got[0])
			}
			for _, v := range s.Attrs {
				if strings.Contains(v, "c-42") {
					t.Fatalf("argument value in the request span: %v", s.Attrs)
				}
			}
		}
	}
}

// TestTracingMisconfigured: a bad sampling value or an unset header
// variable fails start-up with a message naming it; a collector that cannot
// be reached is logged and ptcd serves anyway.
func TestTracingMisconfigured(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tracing.endpoint", "127.0.0.1:4317", "--tracing.sampling-ratio", "1.5"}, "ptcd: config: tracing.sampling_ratio (flag -tracing.sampling-ratio): 1.5 is out of range: use a number from 0 (no traces) to 1"},
		{[]string{"--tracing.sampling-ratio", "often"}, `"often" is not a number`},
		{[]string{"--config", writeFile(t, "ptcd.yaml", "tracing: {endpoint: 127.0.0.1:4317, headers_from_env: {x-api-key: PTC_TEST_UNSET_OTLP_KEY}}")},
			"ptcd: config: tracing.headers_from_env.x-api-key names the environment variable PTC_TEST_UNSET_OTLP_KEY, which is not set: set it before starting ptcd"},
	} {
		var stderr testenv.SyncBuffer
		if code := run(context.Background(), append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", ""}, tc.args...), io.Discard, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, stderr.String())
		}
	}

	// Nothing listens on a port just closed.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	_ = lis.Close()
	addr, stop, logs := startPtcd(t, "--demo-tools", "--workers.mode", "inprocess", "--workers.insecure-inprocess", "--shutdown-grace", "100ms",
		"--tracing.endpoint", dead, "--tracing.insecure=true")
	c, err := ptc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Execute(context.Background(), ptc.Request{Source: `return (await tools.get_team_members({department: "engineering"})).length`})
	if err != nil || res.Error != nil || string(res.Result) != "20" {
		t.Fatal(err, res)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(logs.String(), "tracing: the collector cannot be reached now; ptcd serves anyway") {
		t.Fatalf("logs: %s", logs.String())
	}
}

// TestTracingMCPEndpoint: an execute through ptcd's MCP endpoint, sent
// with the caller's W3C trace context in params._meta, exports one trace
// to a real OTLP receiver: the SERVER span "tools/call execute" under the
// caller's span, with the admission wait and the execution beneath it and
// the tool calls beneath the execution — the exact tree, with kinds and
// the attributes saying which request, execution and tool each span is.
func TestTracingMCPEndpoint(t *testing.T) {
	recv := otlptest.Start(t)
	_, stop, logs := startPtcd(t, "--demo-tools", "--workers.mode", "inprocess", "--workers.insecure-inprocess=true",
		"--mcp.listen", "127.0.0.1:0", "--tracing.endpoint", recv.Addr, "--tracing.insecure=true")
	cs, err := mcpConnect(t, mcpURL(t, logs), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, caller := callerContext(t)
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute", Meta: sdk.Meta{"traceparent": carrier.Get("traceparent")},
		Arguments: map[string]any{"code": `const m = await tools.get_team_members({department: "sales"}); return m.length;`}})
	if err != nil || res.IsError {
		t.Fatal(err, mcpText(res))
	}
	_ = cs.Close()
	if code := stop(); code != 0 { // flushes the spans
		t.Fatalf("exit %d: %s", code, logs.String())
	}
	spans := recv.Spans()
	var execID string
	for _, s := range spans {
		if s.Name == "ptc.execute" {
			execID = s.Attrs["ptc.execution.id"]
		}
	}
	want := "tools/call execute SERVER parent=" + caller.SpanID().String() +
		" mcp.method.name=tools/call gen_ai.operation.name=execute_tool gen_ai.tool.name=execute network.transport=tcp ptc.execution.id=EX ptc.outcome=ok\n" +
		"  ptc.admission INTERNAL\n" +
		"  ptc.execute INTERNAL ptc.execution.id=EX ptc.isolation=inprocess ptc.outcome=ok ptc.tool_calls=1\n" +
		"    execute_tool get_team_members INTERNAL gen_ai.operation.name=execute_tool gen_ai.tool.name=get_team_members gen_ai.tool.type=extension gen_ai.tool.call.id=EX/1 ptc.tool.outcome=ok\n"
	if tree := attributedTree(spans, caller.TraceID().String(), execID); execID == "" || tree != want {
		t.Fatalf("span tree\n%s\nwant\n%s", tree, want)
	}
	for _, s := range spans {
		// The session's initialize, sent without the caller's context,
		// is a trace of its own.
		if s.TraceID != caller.TraceID().String() && s.Name != "initialize" {
			t.Errorf("span %s outside the caller's trace", s.Name)
		}
	}
	for _, s := range spans {
		if s.Name == "tools/call execute" && (s.ParentSpanID != caller.SpanID().String() || s.Attrs["mcp.method.name"] != "tools/call" ||
			s.Attrs["mcp.session.id"] != cs.ID() || s.Attrs["jsonrpc.request.id"] == "" || s.Attrs["gen_ai.tool.name"] != "execute") {
			t.Errorf("the MCP request's span: parent %s, %v", s.ParentSpanID, s.Attrs)
		}
	}
}
