package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/internal/testenv"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// ptcdBin is the ptcd binary built by TestMain, for the tests of what a
// user sees on the command line.
var ptcdBin string

func TestMain(m *testing.M) {
	// ptcd runs executions in worker processes: this test binary is
	// re-executed as one.
	if code, ok := worker.Main(); ok {
		os.Exit(code)
	}
	bin, cleanup, err := testenv.BuildCommand()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ptcdBin = bin
	goleak.VerifyTestMain(testenv.Then(testenv.SkipReport(m), cleanup))
}

func startPtcd(t *testing.T, args ...string) (addr string, stop func() int, logs *testenv.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	logs = &testenv.SyncBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, args...), io.Discard, logs, ready)
	}()
	select {
	case addr = <-ready:
	case c := <-code:
		t.Fatalf("ptcd exited with %d: %s", c, logs.String())
	}
	var once sync.Once
	var rc int
	stop = func() int {
		once.Do(func() { cancel(); rc = <-code })
		return rc
	}
	t.Cleanup(func() { stop() })
	return addr, stop, logs
}

// TestPtcdEndToEnd runs the expense example against a real ptcd listener.
func TestPtcdEndToEnd(t *testing.T) {
	addr, stop, logs := startPtcd(t, "--demo-tools")
	c, err := ptc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defs, err := c.Tools(context.Background())
	if err != nil || len(defs) != 3 {
		t.Fatal(err, defs)
	}
	res, err := c.Execute(context.Background(), ptc.Request{Source: `
const team = await tools.get_team_members({department: "engineering"});
return team.length`})
	if err != nil || res.Error != nil || string(res.Result) != "20" {
		t.Fatal(err, res)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Fatalf("logs: %s", logs.String())
	}
	// Durations are logged in milliseconds, as numbers, by gRPC and MCP
	// alike (TestMCPEndpoint checks mcp.time_ms).
	if !regexp.MustCompile(`"msg":"finished call".*"grpc.time_ms":[0-9.e-]+[,}]`).MatchString(logs.String()) {
		t.Fatalf("no finished call record with grpc.time_ms a number of milliseconds: %s", logs.String())
	}
}

// TestGracefulShutdown: an in-flight execution that outlives the grace
// period is cancelled and its caller gets CANCELLED; one that finishes in
// time gets its result. Ending the workers at shutdown is not a worker
// death: nothing is logged as one.
func TestGracefulShutdown(t *testing.T) {
	addr, stop, logs := startPtcd(t, "--shutdown-grace", "200ms")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rpc := ptcv1.NewRunnerServiceClient(conn)
	// A Session whose client tool is never answered: in flight until the
	// grace period ends.
	s, err := rpc.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{
		Execute:     &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: `return await tools.wait({})`}},
		ClientTools: []*ptcv1.ToolDefinition{{Name: "wait"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.Recv(); err != nil || m.GetToolCall() == nil {
		t.Fatal(m, err)
	}
	done := make(chan int)
	go func() { done <- stop() }()
	m, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if k := m.GetResult().GetError().GetKind(); k != ptcv1.ErrorKind_ERROR_KIND_CANCELLED {
		t.Fatalf("kind %v (%v)", k, m)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(logs.String(), "worker process died") {
		t.Fatalf("the shutdown was logged as a worker death:\n%s", logs.String())
	}
}

func TestFlagsAndConfig(t *testing.T) {
	env := map[string]string{"PTC_LIMITS_DEFAULTS_MAX_TOOL_CALLS": "9"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	o, _, err := parseFlags([]string{"--limits.defaults.timeout", "2s", "--limits.ceilings.max-tool-calls", "70", "--demo-tools"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	p := o.cfg.Policy()
	if p.Defaults.Timeout != 2*time.Second || p.Ceilings.MaxToolCalls != 70 || p.Defaults.MaxToolCalls != 9 || !o.cfg.DemoTools {
		t.Fatalf("%+v", p)
	}
	for _, bad := range [][]string{{"--limits.ceilings.max-tool-calls", "-1"}, {"--nope"}, {"extra"}, {"--config", "/does/not/exist.yaml"}} {
		if _, _, err := parseFlags(bad, lookup); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	// A default above its ceiling is refused at start-up.
	var out testenv.SyncBuffer
	if code := run(context.Background(), []string{"--limits.defaults.timeout", "10m", "--limits.ceilings.timeout", "1m"}, io.Discard, &out, nil); code != 2 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	// --print-config prints YAML that names the effective values.
	var printed bytes.Buffer
	if code := run(context.Background(), []string{"--config", "../../examples/ptcd.yaml", "--print-config", "--listen", "127.0.0.1:9999"}, &printed, io.Discard, nil); code != 0 {
		t.Fatalf("print-config exit %d", code)
	}
	if !strings.Contains(printed.String(), "127.0.0.1:9999") || !strings.Contains(printed.String(), "tool_sources") {
		t.Fatalf("printed:\n%s", printed.String())
	}
}
