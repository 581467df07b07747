// Command ptcd serves ptc's RunnerService over gRPC.
//
//	ptcd --listen 127.0.0.1:7878 --demo-tools
//	ptcd --config ptcd.yaml            # see docs/config.md
//	ptcd --print-config                # the effective configuration
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
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
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
	config.DefineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg, err := config.Load(config.Options{File: o.configPath, Flags: fs, LookupEnv: lookupEnv})
	if err != nil {
		return nil, err
	}
	o.cfg = cfg
	return o, nil
}

// run starts the server and blocks until ctx is done and the server has
// shut down. ready, when not nil, receives the bound address.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
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
	for _, v := range config.UnknownEnv(os.Environ(), c) {
		log.Warn("unknown PTC_ environment variable ignored", "name", v)
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
	policy := c.Policy()
	runner, err := ptc.NewRunner(ptc.WithRegistry(reg), ptc.WithDefaults(policy.Defaults), ptc.WithCeilings(policy.Ceilings))
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 2
	}
	grace := time.Duration(c.ShutdownGrace)
	lis, err := net.Listen("tcp", c.Listen)
	if err != nil {
		fmt.Fprintln(stderr, "ptcd:", err)
		return 1
	}
	srv := server.New(runner, server.WithLogger(log))
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, srv)

	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	log.Info("ptcd listening", "addr", lis.Addr().String(), "demo_tools", c.DemoTools, "tools", len(runner.Tools()), "tool_sources", len(sources))
	if ready != nil {
		ready <- lis.Addr().String()
	}

	select {
	case err := <-served:
		log.Error("serve failed", "err", err)
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down", "in_flight", srv.InFlight(), "grace", grace.String())
	drained := make(chan struct{})
	go func() { gs.GracefulStop(); close(drained) }()
	t := time.NewTimer(grace)
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
