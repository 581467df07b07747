package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ptcauth "github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/metrics"
)

// ChainConfig says what the interceptor chain does.
type ChainConfig struct {
	// Log receives one record per finished call (and panics). Required.
	Log *slog.Logger
	// LogPayloads also logs request and response messages (which hold
	// scripts, inputs and tool payloads). Only for debugging.
	LogPayloads bool
	// Metrics, when set, records gRPC server metrics and recovered panics.
	Metrics *metrics.Metrics
	// Auth finds the caller's tenant (see internal/auth); nil lets every
	// call through as no tenant.
	Auth auth.AuthFunc
	// Limiter, when set, rate-limits calls after Auth.
	Limiter ratelimit.Limiter
	// Forward, when set, runs after Auth and before Limiter on unary
	// calls: Forwarder.Unary, which sends a Resume to the replica that
	// parked its execution (the call then counts against its tenant's
	// rate there, not here).
	Forward grpc.UnaryServerInterceptor
}

// Interceptors returns the server options that install the unary and
// stream interceptor chains, outermost first: a guard recovery (a panic
// anywhere in the chain becomes INTERNAL), Prometheus metrics, slog
// logging, auth, rate limiting, the refusal of requests that did not
// decode (INVALID_ARGUMENT; see requestCodec, which the options install),
// and recovery of the handler innermost.
func Interceptors(c ChainConfig) []grpc.ServerOption {
	rec := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		if c.Metrics != nil {
			c.Metrics.ObservePanic()
		}
		method, _ := grpc.Method(ctx)
		c.Log.ErrorContext(ctx, "panic recovered; the call fails with INTERNAL", "grpc.method", method,
			"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		return status.Error(codes.Internal, "internal error: the server failed unexpectedly; the failure is logged")
	})
	events := []logging.LoggableEvent{logging.FinishCall}
	if c.LogPayloads {
		events = append(events, logging.StartCall, logging.PayloadReceived, logging.PayloadSent)
	}
	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		c.Log.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	// Durations in milliseconds, as a number: the unit of every duration
	// in ptcd's logs (grpc.time_ms, mcp.time_ms).
	lopts := []logging.Option{logging.WithLogOnEvents(events...), logging.WithDurationField(func(d time.Duration) logging.Fields {
		return logging.Fields{"grpc.time_ms", float64(d.Microseconds()) / 1000}
	})}

	authFn := c.Auth
	if authFn == nil {
		authFn = func(ctx context.Context) (context.Context, error) { return ctx, nil }
	}
	// withTenantField adds the tenant to the call's log record.
	tenantAuth := func(ctx context.Context) (context.Context, error) {
		ctx, err := authFn(ctx)
		if err == nil {
			if t, ok := ptcauth.FromContext(ctx); ok {
				logging.AddFields(ctx, logging.Fields{"tenant", t.Name})
			}
		}
		return ctx, err
	}
	limiter := c.Limiter
	if limiter != nil && c.Metrics != nil {
		limiter = countingLimiter{limiter, c.Metrics}
	}

	var unary []grpc.UnaryServerInterceptor
	var stream []grpc.StreamServerInterceptor
	unary = append(unary, recovery.UnaryServerInterceptor(rec))
	stream = append(stream, recovery.StreamServerInterceptor(rec))
	if c.Metrics != nil {
		unary = append(unary, c.Metrics.GRPC.UnaryServerInterceptor())
		stream = append(stream, c.Metrics.GRPC.StreamServerInterceptor())
	}
	unary = append(unary, logging.UnaryServerInterceptor(logger, lopts...), auth.UnaryServerInterceptor(tenantAuth))
	stream = append(stream, logging.StreamServerInterceptor(logger, lopts...), auth.StreamServerInterceptor(tenantAuth))
	if c.Forward != nil {
		unary = append(unary, c.Forward)
	}
	if limiter != nil {
		unary = append(unary, ratelimit.UnaryServerInterceptor(limiter))
		stream = append(stream, ratelimit.StreamServerInterceptor(limiter))
	}
	unary = append(unary, refuseMalformedUnary, recovery.UnaryServerInterceptor(rec))
	stream = append(stream, refuseMalformedStream, recovery.StreamServerInterceptor(rec))
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...),
		grpc.ForceServerCodecV2(newRequestCodec())}
}

// countingLimiter counts the calls a limiter refuses.
type countingLimiter struct {
	ratelimit.Limiter
	m *metrics.Metrics
}

// Limit asks the wrapped limiter and counts a refusal.
func (l countingLimiter) Limit(ctx context.Context) error {
	err := l.Limiter.Limit(ctx)
	if err != nil {
		l.m.ObserveRateLimited()
	}
	return err
}
