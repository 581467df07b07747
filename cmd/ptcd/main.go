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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/service"
)

func main() {
	// The same binary runs the worker processes of the pool.
	ptc.RunWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// newLogger returns the logger the logging section asks for: format
// text or json, or auto (the default): text when w is a terminal, JSON
// otherwise (a file, a pipe, a log collector).
func newLogger(c config.Logging, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "text" || (c.Format == "auto" && isTerminal(w)) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// run starts the server and blocks until ctx is done and the server has
// shut down. ready, when not nil, receives the bound gRPC address (the
// metrics address is logged as "metrics listening"). Exit codes: 2 for a
// command line or configuration that cannot serve, 1 for a listener that
// cannot be bound or fails.
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
	warnAtStart(c, log)
	svc, err := service.New(ctx, c, service.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		var be *service.BindError
		if errors.As(err, &be) {
			return 1
		}
		return 2
	}
	logIsolation(c, svc.Runtime(), log)
	svc.Start()
	if ready != nil {
		ready <- svc.Addr()
	}
	if err := svc.Wait(ctx); err != nil {
		return 1
	}
	return 0
}

// warnAtStart logs what the configuration leaves open: PTC_ variables no
// key reads, authentication off on a non-loopback listener.
func warnAtStart(c *config.Config, log *slog.Logger) {
	for _, v := range config.UnknownEnv(os.Environ(), c) {
		log.Warn("unknown PTC_ environment variable ignored", "name", v)
	}
	if c.Auth.InsecureNoAuth && !config.IsLoopback(c.Listen) {
		log.Warn("authentication is off on a non-loopback listener (insecure_no_auth): anyone who reaches it can run scripts", "listen", c.Listen)
	}
}

// logIsolation logs the isolation in force, and what is missing.
func logIsolation(c *config.Config, rt *service.Runtime, log *slog.Logger) {
	if rt.EphemeralKeys() {
		log.Warn("continuations are signed with a key made at start: paused executions cannot be resumed after a restart or on another replica; set durable.keys")
	}
	rep := reportOf(rt.Executor.Workers().Facts(), service.WorkerConfig(c).NoNetworkNamespace)
	log.Info("execution isolation", rep.attrs()...)
	if c.Workers.Mode == "inprocess" {
		log.Warn("scripts run inside ptcd itself (workers.mode: inprocess, workers.insecure_inprocess: true): "+
			"no process isolation, no OS memory limit, and ptcd's memory, files and network within reach of any engine bug; "+
			"run only trusted scripts this way, and use workers.mode: worker for anything else", "mode", "inprocess")
	}
}
