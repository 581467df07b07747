package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/telemetry/otlptest"
	"github.com/ptcrun/ptc/tools"
)

// treeKeys are the attributes shown for each kind of span in
// attributedTree: what says which call, execution or tool a span is, and
// how it ended.
var treeKeys = map[string][]string{
	"rpc":           {"rpc.method", "rpc.response.status_code", "ptc.execution.id", "ptc.outcome"},
	"mcp":           {"mcp.method.name", "gen_ai.operation.name", "gen_ai.tool.name", "network.transport", "ptc.execution.id", "ptc.outcome"},
	"ptc.admission": nil,
	"ptc.execute":   {"ptc.execution.id", "ptc.isolation", "ptc.outcome", "ptc.resumed", "ptc.tool_calls"},
	"execute_tool":  {"gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.type", "gen_ai.tool.call.id", "ptc.tool.client", "ptc.tool.outcome"},
}

// attributedTree renders the spans of one trace as an indented tree, one
// line per span: its name, its kind and the attributes treeKeys names for
// it, the execution id written as "EX". Children are sorted by name, then
// start time. Spans whose parent is not in the trace are roots, their
// parent given, so the caller's span shows.
func attributedTree(spans []otlptest.Span, traceID, execID string) string {
	in := map[string]bool{}
	kids := map[string][]otlptest.Span{}
	for _, s := range spans {
		if s.TraceID == traceID {
			in[s.SpanID] = true
		}
	}
	var roots []otlptest.Span
	for _, s := range spans {
		switch {
		case s.TraceID != traceID:
		case in[s.ParentSpanID]:
			kids[s.ParentSpanID] = append(kids[s.ParentSpanID], s)
		default:
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(list []otlptest.Span, depth int)
	walk = func(list []otlptest.Span, depth int) {
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].Name != list[j].Name {
				return list[i].Name < list[j].Name
			}
			return list[i].StartUnixNano < list[j].StartUnixNano
		})
		for _, s := range list {
			group := s.Name
			switch {
			case strings.HasPrefix(s.Name, "ptc.v1.RunnerService/"):
				group = "rpc"
			case strings.HasPrefix(s.Name, "execute_tool "):
				group = "execute_tool"
			case strings.HasPrefix(s.Name, "tools/call "):
				group = "mcp"
			}
			line := []string{s.Name, strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_")}
			if depth == 0 {
				line = append(line, "parent="+s.ParentSpanID)
			}
			for _, k := range treeKeys[group] {
				if v, ok := s.Attrs[k]; ok {
					line = append(line, k+"="+strings.ReplaceAll(v, execID, "EX"))
				}
			}
			if s.StatusError {
				line = append(line, "status=error")
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), strings.Join(line, " "))
			walk(kids[s.SpanID], depth+1)
		}
	}
	walk(roots, 0)
	return b.String()
}

// TestTracingSpanTrees runs, under both isolations, on one ptcd exporting
// to an OTLP receiver started here, a gRPC Execute calling a server tool, a
// Session whose script calls a tool the client serves, and a resumable
// Execute that pauses at a client tool and its Resume, each sent with its
// own caller trace context. Each makes exactly the expected tree in the
// caller's trace (names, parents, kinds and the attributes saying which
// call, execution and tool a span is and how it ended), and no span lands
// outside those traces. The paused segment's execution span says
// REQUIRES_ACTION; the resumed segment has its own execution span under
// the Resume.
func TestTracingSpanTrees(t *testing.T) {
	t.Setenv("PTC_TEST_DURABLE_K1", strings.TrimPrefix(durableEnv, "PTC_TEST_DURABLE_K1="))
	for _, mode := range []string{"worker", "inprocess"} {
		t.Run(mode, func(t *testing.T) {
			recv := otlptest.Start(t)
			cfg := writeFile(t, "ptcd.yaml", durableConfig)
			addr, stop, logs := startPtcd(t, "--config", cfg, "--workers.mode", mode, "--workers.insecure-inprocess="+fmt.Sprint(mode == "inprocess"), "--workers.idle", "1",
				"--tracing.endpoint", recv.Addr, "--tracing.insecure=true")
			c := dialClient(t, addr)
			type trace struct {
				name, traceID, parent, execID, want string
			}
			var traces []trace

			// gRPC Execute with a server tool call.
			ctx, caller := callerContext(t)
			res, err := c.Execute(ctx, ptc.Request{Source: `return (await tools.get_team_members({department: "sales"})).length`})
			if err != nil || res.Error != nil {
				t.Fatal(err, res)
			}
			traces = append(traces, trace{"execute", caller.TraceID().String(), caller.SpanID().String(), res.ExecutionID, "" +
				"ptc.v1.RunnerService/Execute SERVER parent=P rpc.method=ptc.v1.RunnerService/Execute rpc.response.status_code=OK ptc.execution.id=EX ptc.outcome=ok\n" +
				"  ptc.admission INTERNAL\n" +
				"  ptc.execute INTERNAL ptc.execution.id=EX ptc.isolation=" + mode + " ptc.outcome=ok ptc.tool_calls=1\n" +
				"    execute_tool get_team_members INTERNAL gen_ai.operation.name=execute_tool gen_ai.tool.name=get_team_members gen_ai.tool.type=extension gen_ai.tool.call.id=EX/1 ptc.tool.outcome=ok\n"})

			// A Session whose script calls a client-served tool.
			ctx, caller = callerContext(t)
			answer := func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`"that one"`), nil }
			res, err = c.Run(ctx, ptc.Request{Source: `return await tools.ask_user({q: "which?"})`}, tools.Tool{Definition: askUser, Handler: answer})
			if err != nil || res.Error != nil {
				t.Fatal(err, res)
			}
			traces = append(traces, trace{"session", caller.TraceID().String(), caller.SpanID().String(), res.ExecutionID, "" +
				"ptc.v1.RunnerService/Session SERVER parent=P rpc.method=ptc.v1.RunnerService/Session rpc.response.status_code=OK ptc.execution.id=EX ptc.outcome=ok\n" +
				"  ptc.admission INTERNAL\n" +
				"  ptc.execute INTERNAL ptc.execution.id=EX ptc.isolation=" + mode + " ptc.outcome=ok ptc.tool_calls=1\n" +
				"    execute_tool ask_user INTERNAL gen_ai.operation.name=execute_tool gen_ai.tool.name=ask_user gen_ai.tool.type=function gen_ai.tool.call.id=EX/1 ptc.tool.client=true ptc.tool.outcome=ok\n"})

			// A resumable Execute pausing at a client tool, and its Resume.
			ctx, caller = callerContext(t)
			paused, err := c.Execute(ctx, ptc.Request{Source: `const n = (await tools.get_team_members({department: "sales"})).length; return [n, await tools.ask_user({q: "which?"})]`,
				Resumable: true, ClientTools: []tools.Tool{{Definition: askUser}}})
			if err != nil || paused.Error != nil || len(paused.Pending) != 1 {
				t.Fatal(err, paused)
			}
			done, err := c.Resume(ctx, paused.Continuation, ptc.Answer{CallID: paused.Pending[0].CallID, Output: json.RawMessage(`"the last"`)})
			if err != nil || done.Error != nil || string(done.Result) != `[8,"the last"]` {
				t.Fatal(err, done)
			}
			// In worker processes the paused run stops and the Resume
			// re-runs the script from the journal: the answered call gets a
			// new span under the resumed segment. In process the run stays
			// parked, and the call's one span ends with its answer.
			tool := "    execute_tool ask_user INTERNAL gen_ai.operation.name=execute_tool gen_ai.tool.name=ask_user gen_ai.tool.type=function gen_ai.tool.call.id=EX/2 ptc.tool.client=true ptc.tool.outcome="
			pausedTool, resumedTool := tool+"paused\n", tool+"ok\n"
			if mode == "inprocess" {
				pausedTool, resumedTool = tool+"ok\n", ""
			}
			traces = append(traces, trace{"resumable", caller.TraceID().String(), caller.SpanID().String(), paused.ExecutionID, "" +
				"ptc.v1.RunnerService/Execute SERVER parent=P rpc.method=ptc.v1.RunnerService/Execute rpc.response.status_code=OK ptc.execution.id=EX ptc.outcome=REQUIRES_ACTION\n" +
				"  ptc.admission INTERNAL\n" +
				"  ptc.execute INTERNAL ptc.execution.id=EX ptc.isolation=" + mode + " ptc.outcome=REQUIRES_ACTION ptc.tool_calls=2\n" +
				pausedTool +
				"    execute_tool get_team_members INTERNAL gen_ai.operation.name=execute_tool gen_ai.tool.name=get_team_members gen_ai.tool.type=extension gen_ai.tool.call.id=EX/1 ptc.tool.outcome=ok\n" +
				"ptc.v1.RunnerService/Resume SERVER parent=P rpc.method=ptc.v1.RunnerService/Resume rpc.response.status_code=OK ptc.execution.id=EX ptc.outcome=ok\n" +
				"  ptc.admission INTERNAL\n" +
				"  ptc.execute INTERNAL ptc.execution.id=EX ptc.isolation=" + mode + " ptc.outcome=ok ptc.resumed=true ptc.tool_calls=2\n" +
				resumedTool})

			if code := stop(); code != 0 { // flushes the spans
				t.Fatalf("exit %d: %s", code, logs.String())
			}
			spans := recv.Spans()
			n := 0
			for _, tr := range traces {
				want := strings.ReplaceAll(tr.want, "parent=P", "parent="+tr.parent)
				if got := attributedTree(spans, tr.traceID, tr.execID); got != want {
					t.Errorf("%s: span tree\n%s\nwant\n%s", tr.name, got, want)
				}
				n += strings.Count(want, "\n")
			}
			if len(spans) != n {
				t.Errorf("%d spans exported, %d of them in the callers' traces", len(spans), n)
				for _, s := range spans {
					t.Logf("%s trace %s", s.Name, s.TraceID)
				}
			}
		})
	}
}
