package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/metrics"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestResumeMetricsCountEachCallOnce: an execution paused twice and
// resumed twice counts once in ptc_executions_total (three segments in
// ptc_execution_segments_total), each of its tool calls once in
// ptc_tool_calls_total and their results once in
// ptc_tool_result_bytes_total, although every
// resumed segment's trace covers the whole execution — with the engine
// parked in memory between segments, and re-run from the continuation.
func TestResumeMetricsCountEachCallOnce(t *testing.T) {
	const src = `
		const a = await tools.get_budget_by_level({level: "mid"});
		const b = await tools.pick({});
		const c = await tools.get_budget_by_level({level: "junior"});
		const d = await tools.pick({});
		return [a, b, c, d].length`
	for _, tc := range []struct {
		name   string
		parked int
	}{{"parked", 0}, {"re-run", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			reg := tools.NewRegistry()
			for _, tl := range demo.Tools() {
				if err := reg.Register(tl); err != nil {
					t.Fatal(err)
				}
			}
			dm, err := durable.New(durable.Config{Keys: []durable.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}})
			if err != nil {
				t.Fatal(err)
			}
			ex, err := executor.New(executor.Config{Registry: reg, Durable: dm, Outcomes: wire.Outcomes, Parked: executor.ParkedConfig{Max: tc.parked}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ex.Close() }) // after the server stopped
			m := metrics.New(metrics.Gauges{})
			gs := grpc.NewServer()
			ptcv1.RegisterRunnerServiceServer(gs, server.New(ex, server.WithMetrics(m)))
			rpc := ptcv1.NewRunnerServiceClient(serve(t, gs))

			ctx := context.Background()
			res, err := rpc.Execute(ctx, &ptcv1.ExecuteRequest{Script: js(src), Resumable: true,
				ClientTools: []*ptcv1.ToolDefinition{{Name: "pick"}}})
			if err != nil {
				t.Fatal(err)
			}
			var resultBytes int64
			for res.GetState() == ptcv1.ExecutionState_EXECUTION_STATE_REQUIRES_ACTION {
				a := res.GetPendingActions()[0]
				next, err := rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: res.GetContinuation(),
					Answers: []*ptcv1.ActionAnswer{{CallId: a.GetCallId(), Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: `"x"`}}}})
				if err != nil {
					t.Fatal(err)
				}
				res = next.GetExecution()
			}
			if res.GetResultJson() != "4" || len(res.GetTrace()) != 4 {
				t.Fatalf("end: %v", res)
			}
			for _, r := range res.GetTrace() {
				resultBytes += r.GetResultBytes()
			}
			body := scrape(t, m)
			for _, want := range []string{
				fmt.Sprintf(`ptc_tool_calls_total{outcome="ok",tool="get_budget_by_level"} 2`),
				fmt.Sprintf(`ptc_tool_calls_total{outcome="ok",tool=%q} 2`, metrics.ClientTool),
				fmt.Sprintf(`ptc_tool_call_duration_seconds_count{tool="get_budget_by_level"} 2`),
				fmt.Sprintf(`ptc_tool_result_bytes_total %d`, resultBytes),
				// Paused twice: three segments, one execution, whose
				// duration and CPU are observed once, at its end.
				`ptc_execution_segments_total{language="javascript",outcome="REQUIRES_ACTION"} 2`,
				`ptc_execution_segments_total{language="javascript",outcome="ok"} 1`,
				`ptc_executions_total{language="javascript",outcome="ok"} 1`,
				`ptc_execution_duration_seconds_count{language="javascript"} 1`,
				`ptc_execution_cpu_seconds_count{language="javascript"} 1`,
			} {
				if !strings.Contains(body, want+"\n") {
					t.Errorf("metrics lack %q:\n%s", want, grepLines(body, "ptc_"))
				}
			}
		})
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
