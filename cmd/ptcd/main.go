// Command ptcd serves ptc's RunnerService over gRPC.
//
//	ptcd --listen 127.0.0.1:7878 --demo-tools
//	ptcd --config ptcd.yaml            # see docs/config.md and docs/operations.md
//	ptcd --print-config                # the effective configuration
//	ptcd hash-token < token.txt        # the hash to put in a tenant's token_hashes
//	ptcd check                         # the isolation worker processes get here
//	ptcd help                          # the commands and every flag (or -h)
//
// Besides RunnerService, ptcd serves the gRPC health service (NOT_SERVING
// while draining) and server reflection (for grpcurl), an HTTP listener
// (--metrics-listen, default 127.0.0.1:9090) with /metrics, /healthz and
// /readyz, and, when mcp.listen is set, an MCP endpoint (streamable HTTP,
// default path /mcp; see docs/mcp.md) with the same authentication.
//
// Authentication is off by default only on a loopback listener; elsewhere
// ptcd needs tenants with credentials, or --insecure-no-auth.
//
// SIGTERM or SIGINT starts a graceful shutdown: health turns NOT_SERVING,
// the listener stops accepting, in-flight executions may finish within
// --shutdown-grace, and are then cancelled (they end with CANCELLED).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/metrics"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// maxForceStopAfter bounds the wait for RPCs after in-flight executions
// are cancelled at the end of the grace period (the grace itself, if
// shorter).
const maxForceStopAfter = 5 * time.Second

// maxTracingFlush bounds the export of the last spans at shutdown.
const maxTracingFlush = 5 * time.Second

func main() {
	// The same binary runs the worker processes of the pool.
	ptc.RunWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// newLogger returns the logger the logging section asks for.
func newLogger(c config.Logging, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// run starts the server and blocks until ctx is done and the server has
// shut down. ready, when not nil, receives the bound gRPC address (the
// metrics address is logged as "metrics listening").
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	o, code, ok := parseOrExit("ptcd", args, stdout, stderr)
	if !ok {
		return code
	}
	c := o.cfg
	if o.printConfig {
		if err := c.Print(stdout); err != nil {
			fmt.Fprintln(stderr, "ptcd:", err)
			return 1
		}
		return 0
	}
	log := newLogger(c.Logging, stderr)
	if err := c.CheckServe(); err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	for _, v := range config.UnknownEnv(os.Environ(), c) {
		log.Warn("unknown PTC_ environment variable ignored", "name", v)
	}
	if c.Auth.InsecureNoAuth && !config.IsLoopback(c.Listen) {
		log.Warn("authentication is off on a non-loopback listener (insecure_no_auth): anyone who reaches it can run scripts", "listen", c.Listen)
	}
	authn, err := auth.New(c.AuthEnabled(), c.AuthTenants())
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	tc, err := tlsConfig(c.TLS)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	creds := insecure.NewCredentials()
	if tc != nil {
		creds = credentials.NewTLS(tc)
	}
	// Every listener is bound before anything starts (tool sources, the
	// worker pool): a port in use fails here, with one message, and no
	// worker is started only to be killed. Serving begins below; until
	// then the kernel queues connections. The listeners are closed on
	// every return (Serve, GracefulStop and Shutdown close them too;
	// closing twice is harmless).
	lns, err := bind(c)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 1
	}
	defer lns.close()
	// mcpEP is the MCP endpoint once started (tool sources refresh its
	// descriptions when their tools change).
	var mcpEP atomic.Pointer[mcpEndpoint]

	prov, err := startTracing(ctx, c, os.LookupEnv, log)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	var tracing telemetry.Tracing
	if prov != nil {
		tracing = prov.Tracing
		// Runs last: the spans of the final RPCs are exported too, within
		// the shutdown grace (at most 5s).
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), min(time.Duration(c.ShutdownGrace), maxTracingFlush))
			defer cancel()
			if err := prov.Shutdown(sctx); err != nil {
				log.Warn("tracing: spans still queued at shutdown were dropped", "err", err)
			}
		}()
	}

	reg := tools.NewRegistry()
	if c.DemoTools {
		if err := reg.Register(demo.Tools()...); err != nil {
			fmt.Fprintln(stderr, "ptcd:", err)
			return 2
		}
	}
	sources, err := config.StartTracedSources(ctx, c, nil, log, tracing)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	defer func() {
		for _, s := range sources {
			_ = s.Close()
		}
	}()
	for _, s := range sources {
		s := s
		if err := reg.SetGroup(s.Name(), s.Tools()); err != nil {
			fmt.Fprintln(stderr, "ptcd: tool source", s.Name()+":", err)
			return 2
		}
		s.OnChange(func() {
			if err := reg.SetGroup(s.Name(), s.Tools()); err != nil {
				log.Error("tool source changed but its tools were refused", "source", s.Name(), "err", err)
				return
			}
			log.Info("tool source changed", "source", s.Name(), "tools", len(s.Tools()))
			mcpEP.Load().refresh()
		})
	}
	dm, ephemeral, err := c.DurableManager(ctx, os.LookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd: durable:", err)
		return 2
	}
	defer dm.Close()
	if ephemeral {
		log.Warn("continuations are signed with a key made at start: paused executions cannot be resumed after a restart or on another replica; set durable.keys")
	}
	wcfg := c.WorkerConfig()
	wcfg.Logger = log
	ex, err := executor.New(executor.Config{Registry: reg, Policy: c.Policy(), Workers: &wcfg, Tracing: tracing, WASM: c.WASMConfig(), Python: c.PythonConfig(),
		Durable: dm, Outcomes: wire.Outcomes, Approve: c.ApprovalRule(), Parked: c.ParkedConfig()})
	if err != nil {
		fmt.Fprintln(stderr, "ptcd: workers:", err)
		return 2
	}
	defer ex.Close()
	pool := ex.Workers()
	log.Info("execution isolation", "mode", c.Workers.Mode, "report", reportOf(pool.Facts(), wcfg.NoNetworkNamespace).String())
	if c.Workers.Mode == "inprocess" {
		log.Warn("scripts run inside ptcd itself (workers.mode: inprocess, workers.insecure_inprocess: true): "+
			"no process isolation, no OS memory limit, and ptcd's memory, files and network within reach of any engine bug; "+
			"run only trusted scripts this way, and use workers.mode: worker for anything else", "mode", "inprocess")
	}
	adm, err := admission.New(c.AdmissionConfig())
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	met := metrics.New(metrics.Gauges{Running: adm.Running, Queued: adm.Queued})
	met.SetWorkerStats(func() metrics.WorkerStats {
		st := pool.Stats()
		return metrics.WorkerStats{Alive: st.Alive, Started: st.Started, Died: st.Died, Recycled: st.Recycled, Killed: st.Killed}
	})

	grace := time.Duration(c.ShutdownGrace)
	lis := grpcListener(lns.grpc, c)
	srv := server.New(ex, server.WithLogger(log), server.WithAdmission(adm), server.WithMetrics(met), server.WithTracing(tracing))
	ka := c.GRPC.Keepalive
	// One rate limiter: a tenant's requests count alike over gRPC and MCP.
	limiter := auth.NewRateLimiter(authn)
	opts := server.Interceptors(server.ChainConfig{Log: log, LogPayloads: c.Logging.Level == "debug", Metrics: met,
		Auth: authn.Authenticate, Limiter: limiter})
	opts = append(opts, grpcTransport(c, authn, log)...)
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
	gs := grpc.NewServer(opts...)
	ptcv1.RegisterRunnerServiceServer(gs, srv)
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(ptcv1.RunnerService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	met.GRPC.InitializeMetrics(gs)

	var draining atomic.Bool
	readyFn := func() error {
		if draining.Load() {
			return errors.New("draining")
		}
		return sourcesReady(c, sources)
	}
	var hsrv *http.Server
	httpDone := make(chan error, 1)
	if mlis := lns.metrics; mlis != nil {
		hsrv = &http.Server{Handler: met.Handler(readyFn), ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		// The HTTP goroutine ends when hsrv is shut down below.
		go func() { httpDone <- hsrv.Serve(mlis) }()
		log.Info("metrics listening", "addr", mlis.Addr().String())
	}
	mep := startMCP(c, lns.mcp, srv, authn, limiter, tc, log)
	if mep != nil {
		mcpEP.Store(mep)
		log.Info("mcp listening", "addr", mep.addr, "path", c.MCP.Path, "tls", tc != nil)
	}

	// The serve goroutine ends when gs stops (GracefulStop below).
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	log.Info("ptcd listening", "addr", lis.Addr().String(), "tls", c.TLS.Enabled(), "mtls", c.TLS.ClientCAFile != "",
		"auth", authn.Enabled(), "tenants", len(c.Tenants), "demo_tools", c.DemoTools, "tools", len(reg.Definitions()),
		"tool_sources", len(sources), "max_concurrent", c.Admission.MaxConcurrent)
	if ready != nil {
		ready <- lis.Addr().String()
	}

	code = 0
	select {
	case err := <-served:
		log.Error("serve failed", "err", err)
		code = 1
	case err := <-httpDone:
		log.Error("metrics listener failed", "err", err)
		code = 1
	case err := <-mep.failed():
		log.Error("mcp listener failed", "err", err)
		code = 1
	case <-ctx.Done():
	}
	draining.Store(true)
	hs.Shutdown() // every service NOT_SERVING; watchers are told
	log.Info("shutting down", "in_flight", srv.InFlight(), "grace", grace.String())
	// The drain goroutines end when every gRPC call is done (and every
	// resumed execution that outlived its Resume call has ended) and every
	// MCP execution has ended (or, for MCP, when drainCtx is cancelled
	// below).
	drainCtx, stopDrain := context.WithCancel(context.Background())
	defer stopDrain()
	grpcDrained, mcpDrained, drained := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { gs.GracefulStop(); srv.WaitDetached(); close(grpcDrained) }()
	go func() { mep.drain(drainCtx); close(mcpDrained) }()
	go func() { <-grpcDrained; <-mcpDrained; close(drained) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
		log.Warn("grace period over; cancelling in-flight executions", "in_flight", srv.InFlight())
		srv.CancelAll()
		// Cancelled executions end at once; other streams (a health Watch
		// a client never closes) are cut after a short bound.
		select {
		case <-drained:
		case <-time.After(min(grace, maxForceStopAfter)):
			log.Warn("streams still open after cancelling; closing every connection")
			gs.Stop()
			stopDrain()
			<-drained
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), min(grace, maxForceStopAfter))
	mep.stop(sctx) // after the drain: MCP answers are written; sessions end here
	cancel()
	if hsrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = hsrv.Shutdown(sctx)
		cancel()
	}
	log.Info("stopped")
	return code
}

// listeners are ptcd's bound listeners: gRPC, and metrics and MCP when
// their sections turn them on (nil otherwise).
type listeners struct {
	grpc, metrics, mcp net.Listener
}

// bind binds every listener the configuration asks for, or none: on an
// error the ones already bound are closed. The error names the listener
// ("metrics: listen tcp ...: bind: address already in use").
func bind(c *config.Config) (*listeners, error) {
	var l listeners
	var err error
	if l.grpc, err = net.Listen("tcp", c.Listen); err != nil {
		return nil, err
	}
	if c.Metrics.Listen != "" {
		if l.metrics, err = net.Listen("tcp", c.Metrics.Listen); err != nil {
			l.close()
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	if c.MCP.Enabled() {
		if l.mcp, err = net.Listen("tcp", c.MCP.Listen); err != nil {
			l.close()
			return nil, fmt.Errorf("mcp: %w", err)
		}
	}
	return &l, nil
}

// close closes every bound listener.
func (l *listeners) close() {
	for _, ln := range []net.Listener{l.grpc, l.metrics, l.mcp} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// sourcesReady reports the first required tool source that is down.
func sourcesReady(c *config.Config, sources []config.Source) error {
	required := map[string]bool{}
	for i := range c.ToolSources {
		required[c.ToolSources[i].Name] = c.ToolSources[i].IsRequired()
	}
	for _, s := range sources {
		a, ok := s.(interface{ Available() bool })
		if ok && required[s.Name()] && !a.Available() {
			return fmt.Errorf("required tool source %s is unavailable", s.Name())
		}
	}
	return nil
}

// tlsConfig returns the TLS configuration of the gRPC and MCP listeners
// when the tls section is set, nil (plaintext) otherwise.
func tlsConfig(t config.TLS) (*tls.Config, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: load cert_file and key_file: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: client_ca_file %s holds no PEM certificate", t.ClientCAFile)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.VerifyClientCertIfGiven
		if t.RequireClientCert {
			tc.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return tc, nil
}
