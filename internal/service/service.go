package service

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/metrics"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/internal/telemetry/otlp"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// maxForceStopAfter bounds the wait for RPCs after in-flight executions
// are cancelled at the end of the grace period (the grace itself, if
// shorter).
const maxForceStopAfter = 5 * time.Second

// maxTracingFlush bounds the export of the last spans at shutdown.
const maxTracingFlush = 5 * time.Second

// Service is ptcd assembled: its listeners, tracing, admission, metrics,
// the Runtime, the gRPC server with health and reflection, the metrics
// HTTP server and the MCP endpoint. New builds it, Start serves, Wait
// drains and stops it.
type Service struct {
	cfg   *config.Config
	log   *slog.Logger
	lns   *listeners
	prov  *otlp.Provider
	authn *auth.Authenticator
	rt    *Runtime
	gs    *grpc.Server
	hs    *health.Server
	grpcL net.Listener
	hsrv  *http.Server
	mep   *mcpEndpoint
	cl    *clusterParts

	draining atomic.Bool
	served   chan error // the gRPC server's end
	httpDone chan error // the metrics server's end
}

// New assembles ptcd from a validated configuration, in order: TLS and
// credentials, then every listener bound (a port in use fails here,
// before any worker starts; the kernel queues connections until Start),
// tracing, admission and metrics, the Runtime (tool sources, continuation
// store, executor and worker pool), and the servers over it. Nothing
// serves until Start. On an error, what was built is closed in reverse
// order; a listener that cannot be bound is a *BindError.
func New(ctx context.Context, c *config.Config, o Options) (_ *Service, err error) {
	o = o.withDefaults()
	s := &Service{cfg: c, log: o.Logger, served: make(chan error, 1), httpDone: make(chan error, 1)}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.authn, err = auth.New(c.AuthEnabled(), c.AuthTenants()); err != nil {
		return nil, err
	}
	tc, err := tlsConfig(c.TLS)
	if err != nil {
		return nil, err
	}
	if s.lns, err = bind(c); err != nil {
		return nil, err
	}
	if s.prov, err = startTracing(ctx, c, o.LookupEnv, s.log); err != nil {
		return nil, err
	}
	var tracing telemetry.Tracing
	if s.prov != nil {
		tracing = s.prov.Tracing
	}
	adm, err := admission.New(c.AdmissionConfig())
	if err != nil {
		return nil, err
	}
	met := metrics.New(metrics.Gauges{Running: adm.Running, Queued: adm.Queued})
	if s.cl, err = openCluster(ctx, c, o.LookupEnv); err != nil {
		return nil, err
	}
	forward, err := s.cl.forwarder(c, o.LookupEnv, s.log)
	if err != nil {
		return nil, err
	}
	o.onPark = s.cl.onPark(c, s.log)
	srvOpts := append([]server.Option{server.WithAdmission(adm), server.WithMetrics(met), server.WithTracing(tracing)}, s.cl.serverOptions()...)
	if s.rt, err = newRuntime(ctx, c, o, tracing, srvOpts); err != nil {
		return nil, err
	}
	pool := s.rt.Executor.Workers()
	met.SetWorkerStats(func() metrics.WorkerStats {
		st := pool.Stats()
		return metrics.WorkerStats{Alive: st.Alive, Started: st.Started, Died: st.Died, Recycled: st.Recycled, Killed: st.Killed}
	})
	// One rate limiter: a tenant's requests count alike over gRPC and MCP.
	// With a shared store, a tenant's rate holds across the replicas.
	limiter := s.cl.rateLimiter(auth.NewRateLimiter(s.authn), s.log)
	s.newGRPC(tc, met, limiter, forward, tracing)
	if s.lns.metrics != nil {
		// The metrics port answers without credentials (scrapers and
		// probes): its connections are bounded like the gRPC and MCP
		// listeners', and an idle or slow one is closed.
		s.lns.metrics = server.LimitListener(s.lns.metrics, metricsConnectionsPerPeer, metricsConnections)
		s.hsrv = &http.Server{Handler: met.Handler(s.ready), ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10,
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	}
	s.mep = newMCP(c, s.lns.mcp, s.rt.Server, s.authn, limiter, tc, tracing, s.log)
	s.rt.OnToolsChange(s.mep.refresh)
	return s, nil
}

const (
	// metricsConnections and metricsConnectionsPerPeer bound the open
	// connections of the metrics listener, in all and from one IP address.
	metricsConnections        = 256
	metricsConnectionsPerPeer = 16
)

// newGRPC builds the gRPC server: the interceptor chain, the transport's
// bounds, credentials, message sizes and keepalive, RunnerService, health
// and reflection.
func (s *Service) newGRPC(tc *tls.Config, met *metrics.Metrics, limiter limiter, forward grpc.UnaryServerInterceptor, tracing telemetry.Tracing) {
	c := s.cfg
	creds := insecure.NewCredentials()
	if tc != nil {
		creds = credentials.NewTLS(tc)
	}
	ka := c.GRPC.Keepalive
	opts := server.Interceptors(server.ChainConfig{Log: s.log, LogPayloads: c.Logging.Level == "debug", Metrics: met,
		Auth: s.authn.Authenticate, Limiter: limiter, Forward: forward})
	opts = append(opts, grpcTransport(c, s.authn, s.log)...)
	opts = append(opts,
		grpc.Creds(creds),
		grpc.MaxRecvMsgSize(int(c.GRPC.MaxRecvBytes)),
		grpc.MaxSendMsgSize(int(c.GRPC.MaxSendBytes)),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Duration(ka.MinTime), PermitWithoutStream: ka.PermitWithoutStream}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time: time.Duration(ka.Time), Timeout: time.Duration(ka.Timeout),
			MaxConnectionIdle: time.Duration(ka.MaxConnectionIdle), MaxConnectionAge: time.Duration(ka.MaxConnectionAge),
			MaxConnectionAgeGrace: time.Duration(ka.MaxConnectionAgeGrace)}),
	)
	if tracing.Enabled() {
		opts = append(opts, grpcTracing(tracing))
	}
	s.gs = grpc.NewServer(opts...)
	ptcv1.RegisterRunnerServiceServer(s.gs, s.rt.Server)
	s.hs = health.NewServer()
	s.hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.hs.SetServingStatus(ptcv1.RunnerService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s.gs, newBoundedHealth(s.hs))
	reflection.Register(s.gs)
	met.GRPC.InitializeMetrics(s.gs)
	s.grpcL = grpcListener(s.lns.grpc, c)
}

// ready is /readyz: not while draining, nor while a required tool source
// is down.
func (s *Service) ready() error {
	if s.draining.Load() {
		return errors.New("draining")
	}
	return s.rt.Ready()
}

// Runtime returns the service's Runtime.
func (s *Service) Runtime() *Runtime { return s.rt }

// Addr is the bound gRPC address.
func (s *Service) Addr() string { return s.grpcL.Addr().String() }

// Start serves every listener. The serving goroutines end when Wait
// stops their servers.
func (s *Service) Start() {
	c := s.cfg
	if s.hsrv != nil {
		go func() { s.httpDone <- s.hsrv.Serve(s.lns.metrics) }()
		s.log.Info("metrics listening", "addr", s.lns.metrics.Addr().String())
	}
	if s.mep != nil {
		s.mep.serve()
		s.log.Info("mcp listening", "addr", s.mep.addr, "path", c.MCP.Path, "tls", s.mep.tls)
	}
	go func() { s.served <- s.gs.Serve(s.grpcL) }()
	s.log.Info("ptcd listening", "addr", s.Addr(), "tls", c.TLS.Enabled(), "mtls", c.TLS.ClientCAFile != "",
		"auth", s.authn.Enabled(), "tenants", len(c.Tenants), "demo_tools", c.DemoTools, "tools", len(s.rt.Registry.Definitions()),
		"tool_sources", len(s.rt.Sources()), "max_concurrent", c.Admission.MaxConcurrent)
}

// Wait blocks until ctx ends or a listener fails, then shuts down in the
// reverse order of New: health NOT_SERVING, the listeners stop accepting,
// in-flight gRPC and MCP executions get shutdown_grace to finish and are
// then cancelled, the MCP and metrics servers stop, then the Runtime and
// tracing (its last spans flushed). It returns the listener's failure,
// nil after ctx ended.
func (s *Service) Wait(ctx context.Context) error {
	var failed error
	select {
	case err := <-s.served:
		s.log.Error("serve failed", "err", err)
		failed = err
	case err := <-s.httpDone:
		s.log.Error("metrics listener failed", "err", err)
		failed = err
	case err := <-s.mep.failed():
		s.log.Error("mcp listener failed", "err", err)
		failed = err
	case <-ctx.Done():
	}
	s.drain()
	s.close()
	s.log.Info("stopped")
	if failed == nil && ctx.Err() == nil {
		failed = errors.New("a listener stopped")
	}
	return failed
}

// drain stops accepting and lets in-flight executions end within the
// grace period, then cancels them; the MCP and metrics servers stop last.
func (s *Service) drain() {
	grace := time.Duration(s.cfg.ShutdownGrace)
	srv := s.rt.Server
	s.draining.Store(true)
	s.hs.Shutdown() // every service NOT_SERVING; watchers are told
	s.log.Info("shutting down", "in_flight", srv.InFlight(), "grace", grace.String())
	// The drain goroutines end when every gRPC call is done (and every
	// resumed execution that outlived its Resume call has ended) and every
	// MCP execution has ended (or, for MCP, when drainCtx is cancelled
	// below).
	drainCtx, stopDrain := context.WithCancel(context.Background())
	defer stopDrain()
	grpcDrained, mcpDrained, drained := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { s.gs.GracefulStop(); srv.WaitDetached(); close(grpcDrained) }()
	go func() { s.mep.drain(drainCtx); close(mcpDrained) }()
	go func() { <-grpcDrained; <-mcpDrained; close(drained) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
		s.log.Warn("grace period over; cancelling in-flight executions", "in_flight", srv.InFlight())
		srv.CancelAll()
		// Cancelled executions end at once; other streams (a health Watch
		// a client never closes) are cut after a short bound.
		select {
		case <-drained:
		case <-time.After(min(grace, maxForceStopAfter)):
			s.log.Warn("streams still open after cancelling; closing every connection")
			s.gs.Stop()
			stopDrain()
			<-drained
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), min(grace, maxForceStopAfter))
	s.mep.stop(sctx) // after the drain: MCP answers are written; sessions end here
	cancel()
	if s.hsrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.hsrv.Shutdown(sctx)
		cancel()
	}
}

// close releases what New built, in reverse order: the Runtime (executor,
// continuation store, tool sources), tracing (the spans of the final
// calls exported within the grace, at most 5 s), the listeners (Serve,
// GracefulStop and Shutdown close them too; closing twice is harmless).
func (s *Service) close() {
	if s.rt != nil {
		_ = s.rt.Close()
	}
	s.cl.close()
	if s.prov != nil {
		sctx, cancel := context.WithTimeout(context.Background(), min(time.Duration(s.cfg.ShutdownGrace), maxTracingFlush))
		if err := s.prov.Shutdown(sctx); err != nil {
			s.log.Warn("tracing: spans still queued at shutdown were dropped", "err", err)
		}
		cancel()
	}
	if s.lns != nil {
		s.lns.close()
	}
}

// limiter rate-limits calls (auth.RateLimiter, auth.SharedRateLimiter).
type limiter interface {
	Limit(ctx context.Context) error
}
