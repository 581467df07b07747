package server_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/internal/telemetry/otlp"
	"github.com/ptcrun/ptc/internal/telemetry/otlptest"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// tracedServer serves the demo tools in-process over gRPC with tracing as
// given (the zero Tracing: off, no stats handler), and returns a client.
func tracedServer(b *testing.B, tr telemetry.Tracing) ptcv1.RunnerServiceClient {
	b.Helper()
	reg := tools.NewRegistry()
	if err := reg.Register(demo.Tools()...); err != nil {
		b.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Registry: reg, Tracing: tr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ex.Close() }) // after the server stopped
	var opts []grpc.ServerOption
	if tr.Enabled() {
		opts = append(opts, grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tr.Provider),
			otelgrpc.WithPropagators(tr.Propagator), otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()))))
	}
	gs := grpc.NewServer(opts...)
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex, server.WithTracing(tr)))
	return ptcv1.NewRunnerServiceClient(serve(b, gs))
}

// BenchmarkTracingExpense measures what tracing costs on the expense
// workload (examples/expenses.js, 26 tool calls, in-process engine, over
// gRPC), interleaving in one run three servers: tracing off; tracing on
// with every trace sampled out (ratio 0: the RPC, execution and tool-call
// spans are made but not recorded); and every span recorded and exported
// over OTLP/gRPC to a receiver in this process (29 spans per execution).
// It reports each mode's median time per execution and the overheads as
// the median, over the rounds, of each round's ratio to tracing off
// (targets: ≤ 5 % sampled out, ≤ 15 % recorded): the three executions of a
// round run back to back, so a round's ratio cancels most of the shared
// machine's swings in load, which make means vary by tens of percent.
func BenchmarkTracingExpense(b *testing.B) {
	src, err := os.ReadFile("../../examples/expenses.js")
	if err != nil {
		b.Fatal(err)
	}
	recv := otlptest.Start(b)
	ctx := context.Background()
	provider := func(ratio float64) telemetry.Tracing {
		p, err := otlp.New(ctx, otlp.Config{Endpoint: recv.Addr, Protocol: "grpc", Insecure: true, SamplingRatio: ratio,
			ServiceName: "bench", BatchTimeout: 100 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		return p.Tracing
	}
	modes := []struct {
		name string
		rpc  ptcv1.RunnerServiceClient
		took []time.Duration
	}{
		{name: "off", rpc: tracedServer(b, telemetry.Tracing{})},
		{name: "sampled_out", rpc: tracedServer(b, provider(0))},
		{name: "recorded", rpc: tracedServer(b, provider(1))},
	}
	req := jsReq(string(src))
	for i := range modes { // warm up
		if res, err := modes[i].rpc.Execute(ctx, req); err != nil || res.GetError() != nil {
			b.Fatal(err, res.GetError())
		}
	}
	n := 0
	for b.Loop() {
		// Rotate the order so that no mode always runs after another.
		for k := range modes {
			m := &modes[(n+k)%len(modes)]
			t0 := time.Now()
			res, err := m.rpc.Execute(ctx, req)
			m.took = append(m.took, time.Since(t0))
			if err != nil || res.GetError() != nil {
				b.Fatal(err, res.GetError())
			}
		}
		n++
	}
	per := func(i int) float64 {
		d := slices.Clone(modes[i].took)
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	for i, m := range modes {
		b.ReportMetric(per(i), "ns/exec-"+m.name)
	}
	overhead := func(i int) float64 {
		r := make([]float64, n)
		for k := range r {
			r[k] = float64(modes[i].took[k]) / float64(modes[0].took[k])
		}
		slices.Sort(r)
		return 100 * (r[n/2] - 1)
	}
	b.ReportMetric(overhead(1), "%overhead-sampled_out")
	b.ReportMetric(overhead(2), "%overhead-recorded")
}
