package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/internal/telemetry/otlp"
)

// probeTimeout bounds the start-up check that the collector is reachable.
const probeTimeout = 2 * time.Second

// startTracing sets up the tracing section: nil when tracing is off. A
// header variable that is not set is an error (start-up fails); a
// collector that cannot be reached is only logged, since spans are then
// dropped and ptcd serves as usual.
func startTracing(ctx context.Context, c *config.Config, lookupEnv func(string) (string, bool), log *slog.Logger) (*otlp.Provider, error) {
	t := c.Tracing
	if !t.Enabled() {
		return nil, nil
	}
	headers, err := c.TracingHeaders(lookupEnv)
	if err != nil {
		return nil, err
	}
	p, err := otlp.New(ctx, otlp.Config{Endpoint: t.Endpoint, Protocol: t.Protocol, Insecure: t.Insecure, Headers: headers,
		SamplingRatio: float64(t.SamplingRatio), ServiceName: t.ServiceName, RecordValues: t.RecordValues, Log: log})
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	if err := otlp.Probe(t.Endpoint, probeTimeout); err != nil {
		log.Warn("tracing: the collector cannot be reached now; ptcd serves anyway and drops spans until it can", "endpoint", t.Endpoint, "err", err)
	}
	log.Info("tracing on", "endpoint", t.Endpoint, "protocol", t.Protocol, "sampling_ratio", float64(t.SamplingRatio), "record_values", t.RecordValues)
	return p, nil
}

// grpcTracing is the server option that makes a span of every RPC (health
// checks excepted) from the caller's W3C trace context.
func grpcTracing(t telemetry.Tracing) grpc.ServerOption {
	return grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(t.Provider),
		otelgrpc.WithPropagators(t.Propagator),
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
	))
}
