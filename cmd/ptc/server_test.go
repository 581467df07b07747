package main

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestRunServerPrintsConsole: `ptc run --server` prints every console line
// of the script, the ones written just before it returns included, on
// every run.
func TestRunServerPrintsConsole(t *testing.T) {
	reg := tools.NewRegistry()
	for _, tl := range demo.Tools() {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := executor.New(executor.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	defer func() { gs.Stop(); <-done }()

	p := writeScript(t, "s.js", `await tools.get_budget_by_level({level: "junior"}); for (let i = 0; i < 5; i++) console.log("line " + i); console.warn("last"); return 1`)
	for run := 0; run < 30; run++ {
		code, stdout, stderr := runCLI(t, "", "run", p, "--server", lis.Addr().String())
		if code != 0 || strings.TrimSpace(stdout) != "1" {
			t.Fatalf("run %d: exit %d, stdout %q, stderr %q", run, code, stdout, stderr)
		}
		var want []string
		for i := 0; i < 5; i++ {
			want = append(want, fmt.Sprintf("[log] line %d", i))
		}
		want = append(want, "[warn] last")
		if !strings.Contains(stderr, strings.Join(want, "\n")) {
			t.Fatalf("run %d: stderr %q, want the console lines %q", run, stderr, want)
		}
	}
}

// TestServerNotReached: an address without a port, or a ptcd that does not
// answer, is an I/O error (exit 1) that says what to fix, for every
// command that talks to a server.
func TestServerNotReached(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	lis.Close() // nothing listens there now
	p := writeScript(t, "s.js", "return 1")
	pause := writeScript(t, "pause.json", `{"continuation": "x"}`)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"run without a port", []string{"run", p, "--server", "localhost"}, "ptc run: --server localhost has no port: ptcd listens on 7878 unless configured otherwise (--server localhost:7878)\n"},
		{"an IPv6 address without a port", []string{"run", p, "--server", "[::1]"}, "(--server [::1]:7878)\n"},
		{"tools without a port", []string{"tools", "--server", "localhost"}, "ptc tools: --server localhost has no port"},
		{"resume without a port", []string{"resume", pause, "--server", "localhost"}, "has no port"},
		{"mcp without a port", []string{"mcp", "--server", "localhost"}, "has no port"},
		{"run against nothing", []string{"run", p, "--server", closed}, "ptc: cannot reach ptcd at " + closed + ": "},
		{"resumable run against nothing", []string{"run", p, "--resumable", "--server", closed}, "ptc: cannot reach ptcd at " + closed + ": "},
		{"tools against nothing", []string{"tools", "--server", closed}, "ptc: cannot reach ptcd at " + closed + ": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := ptcMain(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, tt.want)
			}
			if strings.Contains(tt.want, "cannot reach") && !strings.Contains(stderr, "check that ptcd is running and listens there") {
				t.Fatalf("stderr %q does not say what to check", stderr)
			}
		})
	}
}
