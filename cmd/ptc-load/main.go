// Command ptc-load drives a ptcd with concurrent Execute calls and reports
// throughput and latency percentiles.
//
//	ptc-load -addr 127.0.0.1:7878 -c 16 -d 10s              # trivial script
//	ptc-load -addr host:7878 -script examples/expenses.js -c 8 -n 500
//	PTC_TOKEN=... ptc-load -addr host:7878 -tls -ca ca.pem  # bearer token from the environment
//
// It first checks that the server answers (within -connect-timeout; an
// address where nothing listens fails at once with the connection error),
// then runs -c callers for -d (or until -n calls), each sending the next
// request as soon as the previous one answers, and prints executions/s,
// p50/p90/p99/max latency and the server-reported queue time of the
// executions, a count of every outcome (ok, script error kinds) and of
// every failed call by gRPC code with its first message. Failed calls are
// never counted as throughput.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ptc-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr     = fs.String("addr", "127.0.0.1:7878", "ptcd address")
		c        = fs.Int("c", 16, "concurrent callers")
		d        = fs.Duration("d", 10*time.Second, "how long to run")
		n        = fs.Int("n", 0, "stop after this many calls (0 = only -d bounds the run)")
		script   = fs.String("script", "", "JavaScript file to run (default: `return 1`)")
		input    = fs.String("input", "", "input JSON of every execution")
		timeout  = fs.Duration("timeout", 30*time.Second, "deadline of one call")
		connect  = fs.Duration("connect-timeout", 10*time.Second, "how long to wait for the server before giving up")
		useTLS   = fs.Bool("tls", false, "connect with TLS")
		caFile   = fs.String("ca", "", "CA file that verifies the server (with -tls; default: the system roots)")
		asJSON   = fs.Bool("json", false, "print the report as JSON")
		tokenEnv = fs.String("token-env", "PTC_TOKEN", "environment variable holding a bearer token (unset: no token)")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ptc-load: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := Config{Concurrency: *c, Duration: *d, MaxExecutions: *n, Source: "return 1", Input: *input, CallTimeout: *timeout,
		Token: os.Getenv(*tokenEnv)}
	if *script != "" {
		b, err := os.ReadFile(*script)
		if err != nil {
			fmt.Fprintln(stderr, "ptc-load:", err)
			return 2
		}
		cfg.Source = string(b)
	}
	creds := insecure.NewCredentials()
	if *useTLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if *caFile != "" {
			pem, err := os.ReadFile(*caFile)
			if err != nil {
				fmt.Fprintln(stderr, "ptc-load:", err)
				return 2
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				fmt.Fprintf(stderr, "ptc-load: %s holds no PEM certificate\n", *caFile)
				return 2
			}
		}
		creds = credentials.NewTLS(tc)
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(stderr, "ptc-load:", err)
		return 2
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		fmt.Fprintln(stderr, "ptc-load:", err)
		return 2
	}
	defer conn.Close()
	if *connect <= 0 {
		fmt.Fprintln(stderr, "ptc-load: -connect-timeout must be positive")
		return 2
	}
	if err := Reach(ctx, conn, cfg, *connect); err != nil {
		fmt.Fprintf(stderr, "ptc-load: ptcd at %s: %v\n", *addr, err)
		return 1
	}
	rep, err := Run(ctx, conn, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "ptc-load:", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.Print(stdout)
	}
	if rep.OK == 0 {
		return 1
	}
	return 0
}
