package main

import (
	"net"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// startServer serves the demo tools (or none) over gRPC on loopback.
func startServer(t *testing.T, demoTools bool) string {
	t.Helper()
	reg := tools.NewRegistry()
	if err := reg.Register(demo.Tools()...); demoTools && err != nil {
		t.Fatal(err)
	}
	if !demoTools {
		reg = tools.NewRegistry()
	}
	ex, err := executor.New(executor.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	t.Cleanup(func() { gs.Stop(); <-done; _ = ex.Close() })
	return lis.Addr().String()
}

// TestRunProgress: `ptc run --server ADDR --progress` prints a line on
// stderr as each call starts and finishes, server tools and client tools
// alike; without a server the same lines come from the local runner.
func TestRunProgress(t *testing.T) {
	addr, bare := startServer(t, true), startServer(t, false)
	script := writeScript(t, "p.js", `const team = await tools.get_team_members({department: "engineering"});
try { await tools.get_budget_by_level({level: "L99"}) } catch (e) {}
return team.length`)
	start := regexp.MustCompile(`^ptc: → #\d+ \S+ \(\d+ B\)$`)
	for _, args := range [][]string{{"--server", addr}, {"--server", bare, "--client-demo-tools"}, {}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append([]string{"run", script, "--progress"}, args...)...)
			if code != 0 || strings.TrimSpace(stdout) != "20" {
				t.Fatalf("exit %d, stdout %s, stderr %s", code, stdout, stderr)
			}
			var lines []string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, "ptc: →") || strings.HasPrefix(l, "ptc: ←") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 4 || !start.MatchString(lines[0]) || !strings.HasPrefix(lines[1], "ptc: ← #1 get_team_members ok in ") ||
				!strings.HasSuffix(lines[1], "KiB)") || !strings.HasPrefix(lines[3], "ptc: ← #2 get_budget_by_level failed: ") {
				t.Fatalf("progress lines:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}

// TestRunTruncate: --truncate cuts an over-size result to the limit and
// says so; without it the run fails with OUTPUT_LIMIT.
func TestRunTruncate(t *testing.T) {
	addr := startServer(t, true)
	script := writeScript(t, "big.js", `return (await tools.get_team_members({department: "engineering"}))`)
	for _, args := range [][]string{{"--server", addr}, {}} {
		code, stdout, stderr := runCLI(t, "", append([]string{"run", script, "--truncate", "--max-output-bytes", "300"}, args...)...)
		if code != 0 || len(strings.TrimSpace(stdout)) > 300 || !strings.Contains(stdout, "more items]") ||
			!strings.Contains(stderr, "ptc: the result was truncated from ") {
			t.Fatalf("%v: exit %d, stdout %s, stderr %s", args, code, stdout, stderr)
		}
		if code, _, stderr := runCLI(t, "", append([]string{"run", script, "--max-output-bytes", "300"}, args...)...); code != exitKindBase+7 {
			t.Fatalf("%v without --truncate: exit %d, %s", args, code, stderr)
		}
	}
}
