package server_test

import (
	"fmt"
	"github.com/ptcrun/ptc/internal/executor"
	"log/slog"
	"os"
	"slices"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/metrics"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// ExampleInterceptors assembles a production gRPC server the way ptcd
// does: tenants, admission control, metrics and the interceptor chain.
func ExampleInterceptors() {
	runner, err := executor.New(executor.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	authn, err := auth.New(true, []auth.Tenant{{Name: "acme", TokenHashes: []string{auth.HashToken("s3cret-token")}, MaxConcurrent: 4}})
	if err != nil {
		fmt.Println(err)
		return
	}
	adm, err := admission.New(admission.Config{MaxConcurrent: 16, MaxQueue: 64, MaxWait: admission.DefaultMaxWait})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := metrics.New(metrics.Gauges{Running: adm.Running, Queued: adm.Queued})
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))

	gs := grpc.NewServer(server.Interceptors(server.ChainConfig{
		Log: log, Metrics: m, Auth: authn.Authenticate, Limiter: auth.NewRateLimiter(authn),
	})...)
	ptcv1.RegisterRunnerServiceServer(gs, server.New(runner, server.WithLogger(log), server.WithAdmission(adm), server.WithMetrics(m)))
	var names []string
	for _, m := range gs.GetServiceInfo()["ptc.v1.RunnerService"].Methods {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output: [Execute ListTools Resume Session]
}
