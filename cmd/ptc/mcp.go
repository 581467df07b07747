package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/internal/service"
)

// mcpCmd serves ptc's search and execute tools as an MCP server over
// stdio, until the client closes stdin or a signal ends ctx: the demo
// tools by default, the tool sources (and limits and workers) of a ptcd
// configuration file with --config, or a running ptcd's tools with
// --server.
func mcpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ptc mcp", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "serve the tool sources, demo_tools, limits and workers of this ptcd.yaml (see docs/config.md)")
	var srv serverFlags
	srv.register(fs, "front a running ptcd at ADDR (its tools, tenants and limits)")
	inProcess := fs.Bool("inprocess", false, "run scripts in this process instead of worker processes (not a sandbox: trusted scripts only)")
	descBytes := fs.Int("description-bytes", mcpserve.DefaultDescriptionBytes, "most bytes of tool declarations in execute's description (0: none, point to search)")
	verbose := fs.Bool("v", false, "log every tool call on stderr")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ptc mcp: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if err := srv.check(); err != nil {
		fmt.Fprintln(stderr, "ptc mcp:", err)
		return exitUsage
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var backend mcpserve.Backend
	var refresh func(func())
	switch {
	case srv.addr != "" && *cfgPath != "":
		fmt.Fprintln(stderr, "ptc mcp: --server and --config exclude each other: the server has its own configuration")
		return exitUsage
	case srv.addr != "":
		c, err := srv.dial()
		if err != nil {
			fmt.Fprintln(stderr, "ptc mcp:", err)
			return exitUsage
		}
		defer c.Close()
		backend = remoteBackend{c}
	default:
		b, closeAll, onChange, err := localBackend(ctx, *cfgPath, *inProcess, log)
		if err != nil {
			fmt.Fprintln(stderr, "ptc mcp:", err)
			return exitUsage
		}
		defer closeAll()
		backend, refresh = b, onChange
	}
	desc := *descBytes
	if desc == 0 {
		desc = -1
	}
	m := mcpserve.New(mcpserve.Config{Backend: backend, Version: version(), DescriptionBytes: desc, Logger: log})
	if refresh != nil {
		refresh(m.Refresh)
	}
	in, out := io.NopCloser(stdin), nopWriteCloser{stdout}
	if stdin == os.Stdin && stdout == os.Stdout {
		// Through the SDK's stdio transport when serving the real streams.
		err := m.Run(ctx, &sdk.StdioTransport{})
		return mcpExit(ctx, err, stderr)
	}
	err := m.Run(ctx, &sdk.IOTransport{Reader: in, Writer: out})
	return mcpExit(ctx, err, stderr)
}

// mcpExit maps the end of the session to an exit code: a client that went
// away or a signal is a normal end.
func mcpExit(ctx context.Context, err error, stderr io.Writer) int {
	if err == nil || ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) {
		return exitOK
	}
	fmt.Fprintln(stderr, "ptc mcp:", err)
	return exitUsage
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// localBackend runs scripts here: with the demo tools, or with what a ptcd
// configuration file declares (tool sources, demo tools, limits, workers,
// wasm, approvals; its serving sections do not apply to a stdio server),
// assembled by internal/service as ptcd's are. onChange registers a func
// to call when a tool source's tools change.
func localBackend(ctx context.Context, path string, inProcess bool, log *slog.Logger) (b mcpserve.Backend, closeAll func(), onChange func(func()), err error) {
	cfg := config.Default()
	cfg.DemoTools = true
	if path != "" {
		if cfg, err = config.Load(config.Options{File: path}); err != nil {
			return nil, nil, nil, err
		}
		if len(cfg.Tenants) > 0 || cfg.MCP.Enabled() {
			log.Warn("the file's tenants, auth and listeners do not apply to a stdio server: its one client gets every tool and the server's limits", "config", path)
		}
	}
	rt, err := service.NewRuntime(ctx, cfg, service.Options{Logger: log, InProcess: inProcess, NoContinuations: true})
	if err != nil {
		return nil, nil, nil, err
	}
	return rt.Server, func() { _ = rt.Close() }, rt.OnToolsChange, nil
}

// remoteBackend runs scripts on a ptcd through the Go client.
type remoteBackend struct{ c *ptc.Client }

// Tools implements mcpserve.Backend.
func (r remoteBackend) Tools(ctx context.Context, q core.ToolQuery) (*core.ToolList, *fault.Error) {
	l, err := r.c.ListTools(ctx, ptc.ToolQuery{Query: q.Query, Limit: q.Limit, Names: q.Names, TypeScript: q.TypeScript})
	if err != nil {
		return nil, remoteFault(err)
	}
	out := &core.ToolList{Tools: l.Tools, TypeScript: l.TypeScript, Prompt: l.Prompt, ApproxTokens: l.ApproxTokens}
	for i, score := range l.Scores {
		if i < len(l.Tools) {
			out.Matches = append(out.Matches, core.ToolMatch{Name: l.Tools[i].Name, Score: score})
		}
	}
	return out, nil
}

// Run implements mcpserve.Backend: over a Session stream, so that the
// server's progress events reach the request's observer.
func (r remoteBackend) Run(ctx context.Context, req core.Request) (*core.Result, *fault.Error) {
	preq := ptc.Request{Language: ptc.Language(req.Language), Source: req.Source, Input: req.Input}
	if ap := req.Approve; ap != nil {
		// The server asks over the Session; the MCP client's user decides.
		preq.Approve = func(ctx context.Context, a ptc.Action) (bool, string) {
			return ap(ctx, core.Action{CallID: a.CallID, Kind: core.ActionApproval, Seq: a.Seq, Tool: a.Tool,
				Arguments: a.Arguments, IdempotencyKey: a.IdempotencyKey, Reason: a.Reason})
		}
	}
	if obs := req.Observer; obs != nil {
		preq.OnProgress = func(p ptc.ProgressEvent) {
			ev := &core.CallEvent{Seq: p.Seq, Tool: p.Tool, StartedAfter: p.StartedAfter, Finished: p.Finished, Duration: p.Duration}
			if !p.Finished {
				obs.CallStarted(ctx, ev)
				return
			}
			ev.OK = p.Outcome == "ok"
			if !ev.OK {
				ev.ErrorCode = p.Outcome
			}
			obs.CallFinished(ctx, ev)
		}
	}
	res, err := r.c.Run(ctx, preq)
	if err != nil {
		return nil, remoteFault(err)
	}
	out := &core.Result{ExecutionID: res.ExecutionID, Result: res.Result, ModelMessage: res.ModelMessage,
		LogsTruncated: res.LogsTruncated, Stats: core.Stats(res.Stats)}
	if e := res.Error; e != nil {
		out.Error = &fault.Error{Kind: fault.Kind(e.Kind), Message: e.Message, Line: e.Line, Column: e.Column,
			Stack: e.Stack, Tool: e.Tool, Limit: e.Limit, Observed: e.Observed}
	}
	for _, l := range res.Logs {
		out.Logs = append(out.Logs, core.LogEntry(l))
	}
	for _, t := range res.Trace {
		out.Trace = append(out.Trace, core.Record(t))
	}
	return out, nil
}

// remoteFault is a client error as the request model's.
func remoteFault(err error) *fault.Error {
	var e *ptc.Error
	if errors.As(err, &e) {
		return &fault.Error{Code: fault.Code(e.Code), Message: e.Message, RetryAfter: e.RetryAfter, Cause: err}
	}
	return &fault.Error{Code: fault.CodeUnavailable, Message: err.Error(), Cause: err}
}

// version is the module version ptc was built at, "(devel)" in a work tree.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
