// Command ptcd serves ptc's RunnerService over gRPC.
//
//	ptcd --listen 127.0.0.1:7878 --demo-tools
//
// SIGTERM or SIGINT starts a graceful shutdown: the listener stops
// accepting, in-flight executions may finish within --shutdown-grace, and
// are then cancelled (they end with CANCELLED).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// options are ptcd's settings.
type options struct {
	listen    string
	demoTools bool
	grace     time.Duration
	defaults  limits.Limits
	ceilings  limits.Limits
}

// limitFlags registers one flag per limit field, prefixed (e.g. "default-", "max-").
func limitFlags(fs *flag.FlagSet, prefix, what string, l *limits.Limits) {
	fs.DurationVar(&l.Timeout, prefix+"timeout", l.Timeout, what+" wall-clock timeout of an execution")
	fs.DurationVar(&l.CPUTime, prefix+"cpu-time", l.CPUTime, what+" CPU time of an execution")
	fs.Int64Var(&l.MemoryBytes, prefix+"memory-bytes", l.MemoryBytes, what+" memory of an execution, in bytes")
	var calls, conc = int(l.MaxToolCalls), int(l.MaxConcurrentToolCalls)
	fs.Func(prefix+"tool-calls", fmt.Sprintf("%s tool calls per execution (default %d)", what, calls), intInto(&l.MaxToolCalls))
	fs.Func(prefix+"concurrent-tool-calls", fmt.Sprintf("%s concurrent tool calls per execution (default %d)", what, conc), intInto(&l.MaxConcurrentToolCalls))
	fs.Int64Var(&l.MaxOutputBytes, prefix+"output-bytes", l.MaxOutputBytes, what+" result JSON size, in bytes")
	fs.Int64Var(&l.MaxLogBytes, prefix+"log-bytes", l.MaxLogBytes, what+" captured console output, in bytes")
}

func intInto(p *int32) func(string) error {
	return func(s string) error {
		var v int32
		if _, err := fmt.Sscan(s, &v); err != nil || v < 0 {
			return fmt.Errorf("want a non-negative integer, got %q", s)
		}
		*p = v
		return nil
	}
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{defaults: limits.Defaults(), ceilings: limits.Ceilings()}
	fs := flag.NewFlagSet("ptcd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:7878", "gRPC listen address")
	fs.BoolVar(&o.demoTools, "demo-tools", false, "register the built-in demo tools (a fake company for the expense example)")
	fs.DurationVar(&o.grace, "shutdown-grace", 30*time.Second, "how long in-flight executions may run after a shutdown signal")
	limitFlags(fs, "default-", "default", &o.defaults)
	limitFlags(fs, "max-", "largest allowed", &o.ceilings)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

// run starts the server and blocks until ctx is done and the server has
// shut down. ready, when not nil, receives the bound address.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	opts := []ptc.Option{ptc.WithDefaults(o.defaults), ptc.WithCeilings(o.ceilings)}
	if o.demoTools {
		opts = append(opts, ptc.WithTools(demo.Tools()...))
	}
	runner, err := ptc.NewRunner(opts...)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	lis, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 1
	}
	srv := server.New(runner, server.WithLogger(log))
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, srv)

	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	log.Info("ptcd listening", "addr", lis.Addr().String(), "demo_tools", o.demoTools, "tools", len(runner.Tools()))
	if ready != nil {
		ready <- lis.Addr().String()
	}

	select {
	case err := <-served:
		log.Error("serve failed", "err", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down", "in_flight", srv.InFlight(), "grace", o.grace.String())
	drained := make(chan struct{})
	go func() { gs.GracefulStop(); close(drained) }()
	t := time.NewTimer(o.grace)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
		log.Warn("grace period over; cancelling in-flight executions", "in_flight", srv.InFlight())
		srv.CancelAll()
		<-drained
	}
	log.Info("stopped")
	return 0
}
