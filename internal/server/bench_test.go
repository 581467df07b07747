package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/ptcrun/ptc"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// BenchmarkExecuteVsEcho alternates a trivial Execute and a bare unary echo
// on the same connection and reports both and their ratio (target ≤ 3×).
func BenchmarkExecuteVsEcho(b *testing.B) {
	f := start(b)
	echo := testgrpc.NewTestServiceClient(f.conn)
	ctx := context.Background()
	req := jsReq(`return {ok: 1}`)
	ping := &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: []byte(`{"ok":1}`)}}
	var tExec, tEcho time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := echo.UnaryCall(ctx, ping); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		res, err := f.rpc.Execute(ctx, req)
		if err != nil || res.GetError() != nil {
			b.Fatal(err, res.GetError())
		}
		tExec += time.Since(t1)
		tEcho += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tExec.Nanoseconds())/n, "ns/execute")
	b.ReportMetric(float64(tEcho.Nanoseconds())/n, "ns/echo")
	b.ReportMetric(float64(tExec)/float64(tEcho), "execute/echo")
}

// BenchmarkClientToolRoundTrip measures one awaited client-served tool
// call (100 sequential calls per Session) beside a bare bidirectional
// ping-pong on the same connection, and reports the ratio (target ≤ 1.5×).
// call/pingpong divides whole Sessions (start and result included) by the
// ping-pongs; the round trip of one call is also measured on its own, as
// the time between the handler's starts of consecutive calls (answer →
// server → script → next call → client), and reported as the ratio of
// means (round-trip/pingpong) and of medians (p50-round-trip/p50-pingpong),
// so that a tail the host adds (GC, preemption) shows as such.
func BenchmarkClientToolRoundTrip(b *testing.B) {
	f := start(b)
	ctx := context.Background()
	echo := testgrpc.NewTestServiceClient(f.conn)
	stream, err := echo.FullDuplexCall(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer stream.CloseSend()
	var last time.Time
	var trips []time.Duration
	tool := clientTool("inc", `{"type":"object"}`, func(_ context.Context, c tools.Call) (json.RawMessage, error) {
		now := time.Now()
		if !last.IsZero() {
			trips = append(trips, now.Sub(last))
		}
		last = now
		return c.Arguments, nil
	})
	tool.Inline = true // served on the stream's goroutine, as the ping-pong is
	const calls = 100
	src := `let s = 0; for (let i = 0; i < 100; i++) { s += (await tools.inc({i})).i } return s`
	ping := &testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte(`{"i":1}`)}}
	var tCall, tPing time.Duration
	var pings []time.Duration
	for b.Loop() {
		t0 := time.Now()
		for i := 0; i < calls; i++ {
			p0 := time.Now()
			if err := stream.Send(ping); err != nil {
				b.Fatal(err)
			}
			if _, err := stream.Recv(); err != nil {
				b.Fatal(err)
			}
			pings = append(pings, time.Since(p0))
		}
		t1 := time.Now()
		last = time.Time{}
		res, err := f.client.Run(ctx, ptc.Request{Source: src}, tool)
		if err != nil || res.Error != nil {
			b.Fatal(err, res.Error)
		}
		tCall += time.Since(t1)
		tPing += t1.Sub(t0)
	}
	n := float64(b.N * calls)
	b.ReportMetric(float64(tCall.Nanoseconds())/n, "ns/call")
	b.ReportMetric(float64(tPing.Nanoseconds())/n, "ns/pingpong")
	b.ReportMetric(float64(tCall)/float64(tPing), "call/pingpong")
	if len(trips) > 0 && len(pings) > 0 {
		b.ReportMetric(float64(mean(trips))/float64(mean(pings)), "round-trip/pingpong")
		b.ReportMetric(float64(median(trips))/float64(median(pings)), "p50-round-trip/p50-pingpong")
		b.ReportMetric(float64(median(trips).Nanoseconds())/1e3, "p50-round-trip-µs")
		b.ReportMetric(float64(median(pings).Nanoseconds())/1e3, "p50-pingpong-µs")
	}
}

// BenchmarkSessionTenClientTools runs a one-call Session that declares
// ten client tools with 25-value input schemas, as a harness declares its
// tools with every request: the schemas are compiled once, then found in
// the executor's cache.
func BenchmarkSessionTenClientTools(b *testing.B) {
	f := start(b)
	ctx := context.Background()
	ts := make([]tools.Tool, 10)
	for i := range ts {
		ts[i] = clientTool(fmt.Sprintf("t%d", i), fmt.Sprintf(`{"type":"object","properties":{"member_id":{"type":"string","description":"The member's id (%d)"},"quarter":{"type":"string","enum":["Q1","Q2","Q3","Q4"]},"limit":{"type":"integer","minimum":1,"maximum":100},"tags":{"type":"array","items":{"type":"string"}}},"required":["member_id","quarter"],"additionalProperties":false}`, i),
			func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`{"ok":true}`), nil })
	}
	src := `return (await tools.t3({member_id: "e1", quarter: "Q3"})).ok`
	b.ReportAllocs()
	for b.Loop() {
		res, err := f.client.Run(ctx, ptc.Request{Source: src}, ts...)
		if err != nil || res.Error != nil || string(res.Result) != "true" {
			b.Fatal(err, res.Error)
		}
	}
}

func mean(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s / time.Duration(len(ds))
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkParallelClientTools runs one script that makes 100 client tool
// calls at once (Promise.all).
func BenchmarkParallelClientTools(b *testing.B) {
	f := start(b)
	ctx := context.Background()
	tool := clientTool("inc", `{"type":"object"}`, func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil })
	src := `const r = await Promise.all(Array.from({length: 100}, (_, i) => tools.inc({i}))); return r.length`
	for b.Loop() {
		res, err := f.client.Run(ctx, ptc.Request{Source: src, Limits: ptc.Limits{MaxConcurrentToolCalls: 100}}, tool)
		if err != nil || res.Error != nil || string(res.Result) != "100" {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkExecuteChain compares a trivial Execute on a bare server with
// one through the production chain: recovery, metrics, logging (JSON to
// io.Discard), bearer-token auth, rate limiter, admission and execution
// metrics.
func BenchmarkExecuteChain(b *testing.B) {
	req := jsReq(`return {ok: 1}`)
	b.Run("bare", func(b *testing.B) {
		f := start(b)
		for b.Loop() {
			if _, err := f.rpc.Execute(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("chain", func(b *testing.B) {
		p := startProd(b, prodConfig{authOn: true, quiet: true, tenants: tenantsAB})
		ctx := bearer("token-b")
		for b.Loop() {
			if _, err := p.rpc.Execute(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPauseResumeGRPC is one pause/resume round trip over gRPC on
// loopback: a resumable Execute that pauses at a client tool, then the
// Resume that answers it and completes the execution. The server keeps
// the paused execution in memory (its default), so the Resume does not
// re-run it; BenchmarkResume in package ptc measures a re-run's cost.
func BenchmarkPauseResumeGRPC(b *testing.B) {
	p := startProd(b, prodConfig{quiet: true})
	ctx := context.Background()
	req := &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT,
		Source: `const t = await tools.get_budget_by_level({level: "senior"}); return t.travel_limit + await tools.ask({})`},
		Resumable: true, ClientTools: []*ptcv1.ToolDefinition{{Name: "ask"}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := p.rpc.Execute(ctx, req)
		if err != nil || len(res.GetPendingActions()) != 1 {
			b.Fatal(err, res)
		}
		out, err := p.rpc.Resume(ctx, &ptcv1.ResumeRequest{Continuation: res.GetContinuation(), Answers: []*ptcv1.ActionAnswer{{
			CallId: res.GetPendingActions()[0].GetCallId(), Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: "1"}}}})
		if err != nil || out.GetExecution().GetResultJson() != "3001" {
			b.Fatal(err, out)
		}
	}
}
