// Command ptc runs ptc scripts locally or against a ptcd server, and lists
// tools.
//
//	ptc run examples/expenses.js                 # in a worker process, demo tools
//	ptc run script.js --input '{"n": 1}'          # input as JSON, or @file
//	ptc run script.js --server 127.0.0.1:7878     # on a server (Session stream)
//	ptc tools [--server ADDR]
//	ptc mcp [--config ptcd.yaml | --server ADDR]  # an MCP server over stdio
//
// ptc run prints the result JSON on stdout, console output and a one-line
// summary on stderr, and exits with a code per outcome (see exitCodes).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ptcrun/ptc"
)

func main() {
	// `ptc run`, `ptc resume` and `ptc mcp` run scripts in worker
	// processes: this binary re-executed.
	ptc.RunWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
