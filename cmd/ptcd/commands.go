package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/ptcrun/ptc/internal/service"
	"io"
	"os"
	"strings"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/config"
)

// commands are ptcd's subcommands, in the order usage lists them.
var commands = []struct{ name, args, doc string }{
	{"", "[flags]", "serve ptc's RunnerService over gRPC (and health, reflection, /metrics)"},
	{"check", "[flags]", "print the isolation worker processes get on this host, then exit"},
	{"hash-token", "< token.txt", "print the stored form (sha256:…) of the bearer token on standard input, for a tenant's token_hashes"},
	{"help", "", "print this text"},
}

// usageText is ptcd's help: the commands, where configuration comes from,
// then every flag of fs.
func usageText(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands {
		name := strings.Join(strings.Fields("ptcd "+c.name+" "+c.args), " ")
		fmt.Fprintf(&b, "  %-28s %s\n", name, c.doc)
	}
	b.WriteString(`
ptcd reads one YAML file (--config), PTC_ environment variables override it
and flags override both; --print-config prints the result. Every key:
docs/config.md. Operators: docs/operations.md.

flags of ptcd and ptcd check:
`)
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return b.String()
}

// dispatch runs the subcommand args name, or the server.
func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return check(args[1:], stdout, stderr)
		case "hash-token":
			return hashToken(args[1:], stdin, stdout, stderr)
		case "help":
			fmt.Fprint(stdout, usageText(newFlagSet(&options{})))
			return 0
		}
	}
	return run(ctx, args, stdout, stderr, nil)
}

// hashToken prints the stored form of the token on the first line of
// stdin, for a tenant's token_hashes.
func hashToken(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(stdout, "usage: ptcd hash-token < token.txt\n\nprints the stored form (sha256:…) of the bearer token on the first line of standard input, for a tenant's token_hashes")
		return 0
	}
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

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// options are ptcd's command-line settings beyond the config keys.
type options struct {
	configPath  string
	printConfig bool
	cfg         *config.Config

	metricsListen *string
	insecure      *bool
}

// newFlagSet defines ptcd's flags (those of ptcd and ptcd check) over o.
// It prints nothing itself: parseOrExit reports errors and help.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("ptcd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.configPath, "config", "", "YAML configuration file (see docs/config.md)")
	fs.BoolVar(&o.printConfig, "print-config", false, "print the effective configuration as YAML and exit")
	o.metricsListen = fs.String("metrics-listen", "", "short for -metrics.listen")
	o.insecure = fs.Bool("insecure-no-auth", false, "short for -auth.insecure-no-auth: serve without authentication on a non-loopback address")
	config.DefineFlags(fs)
	return fs
}

// parseFlags parses the command line and loads the configuration:
// the file (--config) < PTC_ environment variables < flags.
func parseFlags(args []string, lookupEnv func(string) (string, bool)) (*options, *flag.FlagSet, error) {
	o := &options{}
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, fs, err
		}
		return nil, fs, commandLineError{err}
	}
	if fs.NArg() > 0 {
		return nil, fs, commandLineError{fmt.Errorf("unknown command %q: the commands are check, hash-token and help", fs.Arg(0))}
	}
	over := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "metrics-listen":
			over["metrics.listen"] = *o.metricsListen
		case "insecure-no-auth":
			over["auth.insecure_no_auth"] = fmt.Sprint(*o.insecure)
		}
	})
	cfg, err := config.Load(config.Options{File: o.configPath, Flags: fs, LookupEnv: lookupEnv, Overrides: over})
	if err != nil {
		return nil, fs, err
	}
	o.cfg = cfg
	return o, fs, nil
}

// commandLineError is a flag or argument ptcd does not know, as opposed
// to a configuration error (which names its key).
type commandLineError struct{ error }

// parseOrExit parses the flags of the command name ("ptcd" or "ptcd
// check"). When it returns ok false, the command exits with code: 0 after
// printing the help asked for, 2 after reporting a bad command line or
// configuration.
func parseOrExit(name string, args []string, stdout, stderr io.Writer) (o *options, code int, ok bool) {
	o, fs, err := parseFlags(args, os.LookupEnv)
	var cl commandLineError
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usageText(fs))
		return nil, 0, false
	case errors.As(err, &cl):
		fmt.Fprintf(stderr, "%s: %v (ptcd -h lists the commands and flags)\n", name, err)
		return nil, 2, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return nil, 2, false
	}
	return o, 0, true
}

// check prints what isolation the worker processes get on this host.
func check(args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseOrExit("ptcd check", args, stdout, stderr)
	if !ok {
		return code
	}
	facts, err := service.CheckWorkers(o.cfg)
	fmt.Fprintln(stdout, reportOf(facts, service.WorkerConfig(o.cfg).NoNetworkNamespace).String())
	if err != nil {
		fmt.Fprintln(stderr, "ptcd check:", err)
		return 1
	}
	return 0
}
