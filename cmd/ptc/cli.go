package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/plural"
	"github.com/ptcrun/ptc/internal/pystub"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// Exit codes of `ptc run`: 0 success, 1 usage or I/O error (a server that
// cannot be reached included), 2 request rejected (gRPC status or invalid
// request), and 10 + the error kind for a script that failed (11
// SYNTAX_ERROR … 20 INTERNAL).
const (
	exitOK       = 0
	exitUsage    = 1
	exitRejected = 2
	exitKindBase = 10
)

const usage = `usage:
  ptc run FILE [--input JSON|@FILE] [--language L] [--server ADDR [--tls] [--tls-ca FILE]] [--client-demo-tools] [--timeout D]
               [--cpu-time D] [--memory-bytes N] [--max-tool-calls N] [--max-output-bytes N]
               [--result-schema JSON|@FILE] [--allow TOOL,...] [--json]
               [--deterministic] [--seed N] [--record CASSETTE] [--progress]
               [--truncate] [--max-result-tokens N] [--inprocess]
  ptc run [FILE] --replay CASSETTE [--input JSON|@FILE] [--seed N] [--json]
  ptc run FILE --resumable [--client-tools JSON|@FILE] [--require-approval TOOL,...]
               [--continuation FILE] [--server ADDR [--tls] [--tls-ca FILE]] ...
  ptc resume [FILE|-] [--approve ID|all]... [--deny ID=REASON]... [--answer ID=JSON]...
               [--error ID=CODE:MESSAGE]... [--continuation FILE] [--server ADDR [--tls] [--tls-ca FILE]] [--json] [--inprocess]
  ptc test [DIR] [--run REGEX] [--junit FILE] [--update] [--parallel N] [-v]
  ptc tools [--server ADDR [--tls] [--tls-ca FILE]] [--query TEXT] [--limit N] [--typescript|--python] [--json] [NAME...]
  ptc mcp [--config FILE | --server ADDR [--tls] [--tls-ca FILE]] [--inprocess] [--description-bytes N] [-v]
      serve the search and execute tools to an MCP client over stdio (see docs/mcp.md)
  ptc python install
      download CPython for WASI, verify its SHA-256 and keep it in the user's cache (docs/python.md)

FILE is JavaScript (.js, .mjs, .cjs), TypeScript (.ts, .mts, .cts), a WebAssembly
module (.wasm) or Python (.py); --language javascript|typescript|wasm|python runs a
file of another name.
--json prints the response as the ptc.v1 ExecuteResponse in protobuf's JSON mapping;
a paused run or resume prints it so always.
With --server, $PTC_TOKEN holds the bearer token sent to ptcd; --tls connects over TLS
(trusting the system's CAs), --tls-ca FILE trusting the CA certificates in a PEM file.

exit codes of run and resume: 0 ok, 1 usage or I/O error (ptcd not reached), 2 request rejected, 3 replay divergence,
  5 paused (the pause state is on stdout), 11 SYNTAX_ERROR, 12 SCRIPT_ERROR, 13 TIMEOUT,
  14 CPU_LIMIT, 15 MEMORY_LIMIT, 16 TOOL_CALL_LIMIT, 17 OUTPUT_LIMIT, 18 RESULT_SCHEMA_VIOLATION,
  19 CANCELLED, 20 INTERNAL, 21 PAUSE_LIMIT, 22 RESUME_DIVERGED
exit codes of test: 0 every case passed, 1 usage or I/O error, 4 a case failed
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runCmd(ctx, args[1:], stdin, stdout, stderr)
	case "resume":
		return resumeCmd(ctx, args[1:], stdin, stdout, stderr)
	case "tools":
		return toolsCmd(ctx, args[1:], stdout, stderr)
	case "test":
		return testCmd(ctx, args[1:], stdout, stderr)
	case "mcp":
		return mcpCmd(ctx, args[1:], stdin, stdout, stderr)
	case "python":
		return pythonCmd(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "ptc: unknown command %q\n%s", args[0], usage)
	return exitUsage
}

// splitArgs moves flags after positional arguments in front of them, so
// that `ptc run FILE --input x` works with the flag package.
func splitArgs(args []string, boolFlags map[string]bool) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && !boolFlags[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

type runFlags struct {
	input, resultSchema, allow string
	server                     serverFlags
	// language names the script's language when its extension does not.
	language            string
	clientDemo, jsonOut bool
	progress, truncate  bool
	// inProcess runs the script in this process, not a worker process.
	inProcess bool
	limits    ptc.Limits
	// record and replay name cassettes; see record.go.
	record, replay string
	deterministic  bool
	seed           uint64
	durable        durableFlags
}

func runCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f runFlags
	fs := flag.NewFlagSet("ptc run", flag.ContinueOnError)
	fs.StringVar(&f.input, "input", "", "input JSON, or @FILE (@- for stdin)")
	fs.StringVar(&f.language, "language", "", "javascript, typescript, wasm or python (default: from the file's extension)")
	f.server.register(fs, "run on a ptcd server at ADDR (over a Session stream)")
	fs.BoolVar(&f.clientDemo, "client-demo-tools", false, "with --server: serve the demo tools from this process as client tools")
	fs.StringVar(&f.resultSchema, "result-schema", "", "JSON Schema the result must match, or @FILE")
	fs.StringVar(&f.allow, "allow", "", "comma-separated server tools the script may call (default all)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the whole response (result, error, stats, trace) on stdout as a ptc.v1 ExecuteResponse in protobuf's JSON mapping")
	fs.BoolVar(&f.progress, "progress", false, "print a line on stderr as each tool call starts and finishes")
	fs.BoolVar(&f.truncate, "truncate", false, "cut a result over the output limits to fit (overflow policy truncate) instead of failing")
	fs.BoolVar(&f.inProcess, "inprocess", false, "run the script in this process instead of a worker process (not a sandbox: trusted scripts only)")
	var lim limits.Limits
	for _, lf := range limits.Fields() {
		fs.Var(limits.Value{L: &lim, Field: lf}, strings.ReplaceAll(lf.Name, "_", "-"), lf.Doc+" (0: the default)")
	}
	fs.StringVar(&f.record, "record", "", "write a cassette of the execution to FILE (deterministic mode)")
	fs.StringVar(&f.replay, "replay", "", "answer every tool call from the cassette FILE (the script FILE is then optional)")
	fs.BoolVar(&f.deterministic, "deterministic", false, "seeded Math.random and a virtual clock")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of Math.random (implies --deterministic)")
	f.durable.define(fs)
	if code, ok := parseFlags(fs, splitArgs(args, map[string]bool{"client-demo-tools": true, "json": true, "deterministic": true, "progress": true, "truncate": true, "resumable": true, "tls": true, "inprocess": true}), stdout, stderr); !ok {
		return code
	}
	f.limits = ptc.Limits(lim)
	if err := f.server.check(); err != nil {
		fmt.Fprintln(stderr, "ptc run:", err)
		return exitUsage
	}
	if f.inProcess && f.server.addr != "" {
		fmt.Fprintln(stderr, "ptc run: --inprocess and --server do not go together")
		return exitUsage
	}
	if f.replay != "" && fs.NArg() <= 1 {
		return replayCmd(ctx, f, fs.Arg(0), stdin, stdout, stderr)
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, "ptc run: want exactly one script FILE\n", usage)
		return exitUsage
	}
	path := fs.Arg(0)
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(stderr, "ptc:", err)
		return exitUsage
	}
	req := ptc.Request{Limits: f.limits}
	if err := setScript(&req, path, src, f.language); err != nil {
		fmt.Fprintln(stderr, "ptc:", err)
		return exitUsage
	}
	if !f.readValues(&req, stdin, stderr) {
		return exitUsage
	}
	if f.allow != "" {
		req.AllowedTools = strings.Split(f.allow, ",")
	}
	req.OnLog = func(e ptc.LogEntry) { fmt.Fprintf(stderr, "[%s] %s\n", e.Level, e.Message) }
	if f.progress {
		req.OnProgress = progressPrinter(stderr)
	}
	req.TruncateResult = f.truncate
	applyDeterminism(f, &req)
	if err := f.durable.apply(&req, stdin); err != nil {
		fmt.Fprintln(stderr, "ptc:", err)
		return exitUsage
	}
	if f.record != "" {
		if req.Resumable {
			fmt.Fprintln(stderr, "ptc: --record and --resumable do not go together")
			return exitUsage
		}
		return recordCmd(ctx, f, req, path, stdout, stderr)
	}

	var res *ptc.Result
	switch {
	case req.Resumable && f.server.addr != "":
		res, err = runRemoteResumable(ctx, f, req)
	case req.Resumable:
		res, err = runLocalResumable(ctx, req, local{f.inProcess, stderr})
	case f.server.addr != "":
		res, err = runRemote(ctx, f, req)
	default:
		res, err = runLocal(ctx, req, local{f.inProcess, stderr})
	}
	if err != nil {
		return f.server.failed(stderr, err)
	}
	if res.RequiresAction() {
		// In process, OnLog printed each line as it was written.
		return reportPause(res, f.durable.out, f.server.addr == "", stdout, stderr)
	}
	return report(res, path, f.jsonOut, stdout, stderr)
}

// readValues reads --input and --result-schema (inline or @file) into req;
// it reports a failure on stderr and returns false.
func (f runFlags) readValues(req *ptc.Request, stdin io.Reader, stderr io.Writer) bool {
	var err error
	if f.input != "" {
		if req.Input, err = valueArg(f.input, stdin); err != nil {
			fmt.Fprintf(stderr, "ptc: %s: %v\n", flagName("--input", f.input), err)
			return false
		}
	}
	if f.resultSchema != "" {
		if req.ResultSchema, err = valueArg(f.resultSchema, stdin); err != nil {
			fmt.Fprintf(stderr, "ptc: %s: %v\n", flagName("--result-schema", f.resultSchema), err)
			return false
		}
	}
	return true
}

// flagName names a value flag in a message, with its file when the value
// was read from one: "--input @in.json".
func flagName(flag, value string) string {
	if strings.HasPrefix(value, "@") {
		return flag + " " + value
	}
	return flag
}

func runLocal(ctx context.Context, req ptc.Request, l local) (*ptc.Result, error) {
	r, err := newLocalRunner(l)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Execute(ctx, req)
}

// runLocalResumable runs a resumable request on this machine, with the
// local continuation key (see newDurableRunner). Logs come with the
// result.
func runLocalResumable(ctx context.Context, req ptc.Request, l local) (*ptc.Result, error) {
	r, err := newDurableRunner(l)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Execute(ctx, req)
}

// runRemoteResumable runs a resumable request with Execute on a server.
func runRemoteResumable(ctx context.Context, f runFlags, req ptc.Request) (*ptc.Result, error) {
	c, err := f.server.dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	req.OnLog = nil
	return c.Execute(ctx, req)
}

func runRemote(ctx context.Context, f runFlags, req ptc.Request) (*ptc.Result, error) {
	c, err := f.server.dial()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var client []tools.Tool
	if f.clientDemo {
		client = demo.Tools()
	}
	return c.Run(ctx, req, client...)
}

// report prints the outcome and returns the exit code. file is the
// script's path as the user named it ("" when unknown): stack traces show
// it where the engines name the script script.js or script.ts.
func report(res *ptc.Result, file string, jsonOut bool, stdout, stderr io.Writer) int {
	if jsonOut {
		if err := printResultJSON(stdout, res); err != nil {
			fmt.Fprintln(stderr, "ptc:", err)
			return exitUsage
		}
	} else if res.Error == nil {
		fmt.Fprintln(stdout, string(res.Result))
	}
	s := res.Stats
	if res.Error != nil {
		e := res.Error
		pos := ""
		if e.Line > 0 {
			pos = fmt.Sprintf(" at line %d:%d", e.Line, e.Column)
		}
		fmt.Fprintf(stderr, "ptc: %s%s: %s\n", e.Kind, pos, e.Message)
		if e.Stack != "" {
			fmt.Fprintln(stderr, indent(stackWithFile(e.Stack, file)))
		}
	}
	if res.LogsTruncated {
		fmt.Fprintln(stderr, "ptc: console output was truncated at the log limit")
	}
	if s.ResultTruncated {
		fmt.Fprintf(stderr, "ptc: the result was truncated from %d to %d bytes (%d items or keys dropped, %d strings cut)\n",
			s.UntruncatedOutputBytes, s.OutputBytes, s.DroppedItems, s.CutStrings)
	}
	ratio := ""
	if s.OutputBytes > 0 && s.ToolResultBytes > s.OutputBytes {
		ratio = fmt.Sprintf(" (%.0f× less)", float64(s.ToolResultBytes)/float64(s.OutputBytes))
	}
	outcome := "ok"
	if res.Error != nil {
		outcome = res.Error.Kind.String()
	}
	fmt.Fprintf(stderr, "ptc: %s in %s · %s · %s from tools → %s returned%s\n",
		outcome, s.Duration.Round(10*time.Microsecond), plural.Count(s.ToolCalls, "tool call", "tool calls"),
		plural.Count(s.ToolResultBytes, "byte", "bytes"), plural.Count(s.OutputBytes, "byte", "bytes"), ratio)
	if res.Error != nil {
		return exitKindBase + int(res.Error.Kind)
	}
	return exitOK
}

// engineFile matches a stack frame's position in the script, which the
// engines name script.js (JavaScript) or script.ts (TypeScript) whatever
// the file is called: "at f (script.js:1:22)", "at script.ts:3:9".
var engineFile = regexp.MustCompile(`(^|[ (])script\.(?:js|ts):(\d+:\d+)`)

// stackWithFile puts the script's own path in the frames of stack.
func stackWithFile(stack, file string) string {
	if file == "" {
		return stack
	}
	return engineFile.ReplaceAllStringFunc(stack, func(m string) string {
		sub := engineFile.FindStringSubmatch(m)
		return sub[1] + file + ":" + sub[2]
	})
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func toolsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ptc tools", flag.ContinueOnError)
	var srv serverFlags
	srv.register(fs, "list the tools of a ptcd server at ADDR (default: the built-in demo tools)")
	asJSON := fs.Bool("json", false, "print the whole answer as a ptc.v1 ListToolsResponse in protobuf's JSON mapping")
	typescript := fs.Bool("typescript", false, "print the TypeScript declarations of the selected tools (and the model prompt)")
	python := fs.Bool("python", false, "print Python type stubs of the selected tools: TypedDicts for arguments and results, a tools Protocol")
	query := fs.String("query", "", "rank the tools by relevance to this text")
	limit := fs.Int("limit", 0, "at most this many tools")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	req := &ptcv1.ListToolsRequest{Query: *query, Limit: int32(*limit), IncludeTypescript: *typescript, Names: fs.Args()}
	var res *ptcv1.ListToolsResponse
	var err error
	if err := srv.check(); err != nil {
		fmt.Fprintln(stderr, "ptc tools:", err)
		return exitUsage
	}
	if srv.addr != "" {
		conn, cerr := srv.conn()
		if cerr != nil {
			return srv.failed(stderr, cerr)
		}
		defer conn.Close()
		if res, err = ptcv1.NewRunnerServiceClient(conn).ListTools(ctx, req); err != nil {
			// The same form as ptc run's: CODE: message.
			err = wire.ErrorFromStatus(err)
		}
	} else {
		rt, rerr := newLocalRuntime(ctx)
		if rerr != nil {
			fmt.Fprintln(stderr, "ptc:", rerr)
			return exitUsage
		}
		defer rt.Close()
		l, ferr := rt.Executor.ListTools(wire.ToolQueryFromPB(req), nil, limits.Limits{})
		if ferr != nil {
			err = ferr
		} else {
			res = wire.ToolListPB(l)
		}
	}
	if err != nil {
		return srv.failed(stderr, err)
	}
	switch {
	case *asJSON:
		if err := printJSON(stdout, res); err != nil {
			fmt.Fprintln(stderr, "ptc: --json:", err)
			return exitUsage
		}
	case *python:
		defs := make([]tools.Definition, 0, len(res.GetTools()))
		for _, d := range res.GetTools() {
			defs = append(defs, wire.DefinitionFromPB(d))
		}
		fmt.Fprint(stdout, pystub.Generate(defs))
	case *typescript:
		fmt.Fprintln(stdout, res.GetTypescript())
		fmt.Fprintf(stderr, "ptc: %s, about %s with the prompt\n", plural.Count(len(res.GetTools()), "tool", "tools"),
			plural.Count(res.GetApproxTokens(), "token", "tokens"))
	default:
		printToolTable(stdout, res)
	}
	return exitOK
}

// printToolTable lists the tools under a header: name and description,
// and with --query the relevance score (BM25) that ranked them.
func printToolTable(w io.Writer, res *ptcv1.ListToolsResponse) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	scored := len(res.GetMatches()) > 0
	if scored {
		fmt.Fprintln(tw, "TOOL\tSCORE\tDESCRIPTION")
	} else {
		fmt.Fprintln(tw, "TOOL\tDESCRIPTION")
	}
	for i, d := range res.GetTools() {
		desc := strings.Join(strings.Fields(d.GetDescription()), " ")
		if scored && i < len(res.GetMatches()) {
			fmt.Fprintf(tw, "%s\t%.2f\t%s\n", d.GetName(), res.GetMatches()[i].GetScore(), desc)
		} else if scored {
			fmt.Fprintf(tw, "%s\t\t%s\n", d.GetName(), desc)
		} else {
			fmt.Fprintf(tw, "%s\t%s\n", d.GetName(), desc)
		}
	}
	_ = tw.Flush()
}
