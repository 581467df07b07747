// Command ptcd serves ptc's RunnerService over gRPC.
//
//	ptcd --listen 127.0.0.1:7878 --demo-tools
//	ptcd --config ptcd.yaml            # see docs/config.md and docs/operations.md
//	ptcd --print-config                # the effective configuration
//	ptcd hash-token < token.txt        # the hash to put in a tenant's token_hashes
//	ptcd check                         # the isolation worker processes get here
//
// Besides RunnerService, ptcd serves the gRPC health service (NOT_SERVING
// while draining) and server reflection (for grpcurl), and an HTTP
// listener (--metrics-listen, default 127.0.0.1:9090) with /metrics,
// /healthz and /readyz.
//
// Authentication is off by default only on a loopback listener; elsewhere
// ptcd needs tenants with credentials, or --insecure-no-auth.
//
// SIGTERM or SIGINT starts a graceful shutdown: health turns NOT_SERVING,
// the listener stops accepting, in-flight executions may finish within
// --shutdown-grace, and are then cancelled (they end with CANCELLED).
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
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
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/runtime/worker"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// maxForceStopAfter bounds the wait for RPCs after in-flight executions
// are cancelled at the end of the grace period (the grace itself, if
// shorter).
const maxForceStopAfter = 5 * time.Second

func main() {
	// The same binary runs the worker processes of the pool.
	ptc.RunWorker()
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(check(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "hash-token" {
		os.Exit(hashToken(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// hashToken prints the stored form of the token on the first line of
// stdin, for a tenant's token_hashes.
func hashToken(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "ptcd hash-token: the token is read from standard input, not from arguments (they end up in shell history)")
		return 2
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, auth.MaxTokenBytes+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(stderr, "ptcd hash-token:", err)
		return 1
	}
	token := strings.TrimSpace(line)
	switch {
	case token == "":
		fmt.Fprintln(stderr, "ptcd hash-token: standard input holds no token: pipe one in, e.g. `openssl rand -hex 32 | tee token.txt | ptcd hash-token`")
		return 2
	case len(token) > auth.MaxTokenBytes:
		fmt.Fprintf(stderr, "ptcd hash-token: the token is longer than %d bytes\n", auth.MaxTokenBytes)
		return 2
	case len(token) < 16:
		fmt.Fprintln(stderr, "ptcd hash-token: warning: the token is shorter than 16 characters; use a long random token")
	}
	fmt.Fprintln(stdout, auth.HashToken(token))
	return 0
}

// options are ptcd's command-line settings beyond the config keys.
type options struct {
	configPath  string
	printConfig bool
	cfg         *config.Config
}

// parseFlags parses the command line and loads the configuration:
// the file (--config) < PTC_ environment variables < flags.
func parseFlags(args []string, stderr io.Writer, lookupEnv func(string) (string, bool)) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("ptcd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.configPath, "config", "", "YAML configuration file (see docs/config.md)")
	fs.BoolVar(&o.printConfig, "print-config", false, "print the effective configuration as YAML and exit")
	metricsListen := fs.String("metrics-listen", "", "short for -metrics.listen")
	insecure := fs.Bool("insecure-no-auth", false, "short for -auth.insecure-no-auth: serve without authentication on a non-loopback address")
	config.DefineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	over := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "metrics-listen":
			over["metrics.listen"] = *metricsListen
		case "insecure-no-auth":
			over["auth.insecure_no_auth"] = fmt.Sprint(*insecure)
		}
	})
	cfg, err := config.Load(config.Options{File: o.configPath, Flags: fs, LookupEnv: lookupEnv, Overrides: over})
	if err != nil {
		return nil, err
	}
	o.cfg = cfg
	return o, nil
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

// workerConfig maps the workers section onto the pool's configuration.
func workerConfig(c *config.Config) worker.Config {
	w := c.Workers
	mode := worker.ModeWorker
	if w.Mode == "inprocess" {
		mode = worker.ModeInProcess
	}
	idle := w.Idle
	if idle == 0 {
		idle = -1 // the pool's "none"
	}
	return worker.Config{
		Mode:                    mode,
		Workers:                 idle,
		MaxWorkers:              w.Max,
		ExecutionsPerWorker:     w.ExecutionsPerWorker,
		IdleTimeout:             time.Duration(w.IdleTimeout),
		RecycleAfter:            w.RecycleAfter,
		MaxExecutionMemoryBytes: c.Policy().Ceilings.MemoryBytes,
	}
}

// check prints what isolation the worker processes get on this host.
func check(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr, os.LookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd check:", err)
		return 2
	}
	cfg := workerConfig(o.cfg)
	facts, err := worker.Check(cfg)
	fmt.Fprintln(stdout, reportOf(facts, cfg.NoNetworkNamespace).String())
	if err != nil {
		fmt.Fprintln(stderr, "ptcd check:", err)
		return 1
	}
	return 0
}

// run starts the server and blocks until ctx is done and the server has
// shut down. ready, when not nil, receives the bound gRPC address (the
// metrics address is logged as "metrics listening").
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	o, err := parseFlags(args, stderr, os.LookupEnv)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
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
	creds, err := transportCredentials(c.TLS)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}

	reg := tools.NewRegistry()
	if c.DemoTools {
		if err := demo.Register(reg); err != nil {
			fmt.Fprintln(stderr, "ptcd:", err)
			return 2
		}
	}
	sources, err := config.StartSources(ctx, c, nil, log)
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
		})
	}
	wcfg := workerConfig(c)
	wcfg.Logger = log
	ex, err := executor.New(executor.Config{Registry: reg, Policy: c.Policy(), Workers: &wcfg})
	if err != nil {
		fmt.Fprintln(stderr, "ptcd: workers:", err)
		return 2
	}
	defer ex.Close()
	pool := ex.Workers()
	log.Info("execution isolation", "mode", c.Workers.Mode, "report", reportOf(pool.Facts(), wcfg.NoNetworkNamespace).String())
	if wcfg.Mode == worker.ModeInProcess {
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
	lis, err := net.Listen("tcp", c.Listen)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 1
	}
	srv := server.New(ex, server.WithLogger(log), server.WithAdmission(adm), server.WithMetrics(met))
	ka := c.GRPC.Keepalive
	opts := server.Interceptors(server.ChainConfig{Log: log, LogPayloads: c.Logging.Level == "debug", Metrics: met,
		Auth: authn.Authenticate, Limiter: auth.NewRateLimiter(authn)})
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
	if c.Metrics.Listen != "" {
		mlis, err := net.Listen("tcp", c.Metrics.Listen)
		if err != nil {
			_ = lis.Close()
			fmt.Fprintln(stderr, "ptcd: metrics:", err)
			return 1
		}
		hsrv = &http.Server{Handler: met.Handler(readyFn), ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		// The HTTP goroutine ends when hsrv is shut down below.
		go func() { httpDone <- hsrv.Serve(mlis) }()
		log.Info("metrics listening", "addr", mlis.Addr().String())
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

	code := 0
	select {
	case err := <-served:
		log.Error("serve failed", "err", err)
		code = 1
	case err := <-httpDone:
		log.Error("metrics listener failed", "err", err)
		code = 1
	case <-ctx.Done():
	}
	draining.Store(true)
	hs.Shutdown() // every service NOT_SERVING; watchers are told
	log.Info("shutting down", "in_flight", srv.InFlight(), "grace", grace.String())
	drained := make(chan struct{})
	// The drain goroutine ends when GracefulStop returns: every RPC done.
	go func() { gs.GracefulStop(); close(drained) }()
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
			<-drained
		}
	}
	if hsrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = hsrv.Shutdown(sctx)
		cancel()
	}
	log.Info("stopped")
	return code
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

// transportCredentials returns TLS credentials when the tls section is
// set, plaintext otherwise.
func transportCredentials(t config.TLS) (credentials.TransportCredentials, error) {
	if !t.Enabled() {
		return insecure.NewCredentials(), nil
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
	return credentials.NewTLS(tc), nil
}
