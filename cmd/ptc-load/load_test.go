package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/testenv"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// loadBin is the ptc-load binary built by TestMain.
var loadBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := testenv.BuildCommand()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	loadBin = bin
	goleak.VerifyTestMain(testenv.Then(m, cleanup))
}

// serve runs a RunnerService (auth with one token, admission 2+2) on
// loopback.
func serve(t *testing.T) string {
	t.Helper()
	r, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	adm, err := admission.New(admission.Config{MaxConcurrent: 2, MaxQueue: 64, MaxWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(true, []auth.Tenant{{Name: "load", TokenHashes: []string{auth.HashToken("tok")}}})
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := a.Authenticate(ctx)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}))
	ptcv1.RegisterRunnerServiceServer(gs, server.New(r, server.WithAdmission(adm)))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return lis.Addr().String()
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestRunCounts(t *testing.T) {
	conn := dial(t, serve(t))
	cases := []struct {
		name    string
		cfg     Config
		outcome string
	}{
		{"trivial", Config{Concurrency: 4, Duration: time.Minute, MaxExecutions: 40, Source: "return 1", CallTimeout: time.Minute, Token: "tok"}, "ok"},
		{"script error", Config{Concurrency: 2, Duration: time.Minute, MaxExecutions: 6, Source: "throw 1", CallTimeout: time.Minute, Token: "tok"}, "SCRIPT_ERROR"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), conn, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Calls != tc.cfg.MaxExecutions || rep.Executions != rep.Calls || rep.Outcomes[tc.outcome] != tc.cfg.MaxExecutions || rep.FailedCalls != 0 {
				t.Fatalf("report %+v", rep)
			}
			if rep.P50 <= 0 || rep.P50 > rep.P90 || rep.P90 > rep.P99 || rep.P99 > rep.Max || rep.PerSecond <= 0 {
				t.Fatalf("latencies %+v", rep)
			}
		})
	}
	// Refused calls are failed calls, by code, and never throughput.
	rep, err := Run(context.Background(), conn, Config{Concurrency: 2, Duration: time.Minute, MaxExecutions: 6, Source: "return 1", CallTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 6 || rep.FailedCalls != 6 || rep.Executions != 0 || rep.Errors["UNAUTHENTICATED"] != 6 ||
		!strings.Contains(rep.ErrorMessages["UNAUTHENTICATED"], "token") || rep.PerSecond != 0 || rep.P99 != 0 {
		t.Fatalf("report %+v", rep)
	}
}

// TestReportCountsOnlyExecutions checks that failed calls never count as
// throughput nor in the latencies, and are counted by code.
func TestReportCountsOnlyExecutions(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name    string
		samples []sample
		want    Report
	}{
		{"no call", nil, Report{Outcomes: map[string]int{}}},
		{"all failed", []sample{{latency: ms, code: "UNAVAILABLE", message: "connection refused"}, {latency: ms, code: "UNAVAILABLE", message: "again"}},
			Report{Calls: 2, FailedCalls: 2, Outcomes: map[string]int{}, Errors: map[string]int{"UNAVAILABLE": 2}, ErrorMessages: map[string]string{"UNAVAILABLE": "connection refused"}}},
		{"mixed", []sample{{latency: 4 * ms, outcome: "ok"}, {latency: 100 * ms, code: "DEADLINE_EXCEEDED", message: "deadline"}, {latency: 2 * ms, outcome: "SCRIPT_ERROR"}},
			Report{Calls: 3, Executions: 2, OK: 1, FailedCalls: 1, PerSecond: 2, OKPerSecond: 1, P50: 2, P90: 4, P99: 4, Max: 4,
				Outcomes: map[string]int{"ok": 1, "SCRIPT_ERROR": 1}, Errors: map[string]int{"DEADLINE_EXCEEDED": 1}, ErrorMessages: map[string]string{"DEADLINE_EXCEEDED": "deadline"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := report(0, time.Second, tc.samples)
			tc.want.Elapsed = 1
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Fatalf("got  %s\nwant %s", g, w)
			}
		})
	}
}

func TestRunStopsAtDuration(t *testing.T) {
	conn := dial(t, serve(t))
	rep, err := Run(context.Background(), conn, Config{Concurrency: 2, Duration: time.Second, Source: "return 1", CallTimeout: time.Minute, Token: "tok"})
	if err != nil || rep.Executions == 0 || rep.OK != rep.Executions {
		t.Fatalf("%+v %v", rep, err)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = time.Duration(i+1) * time.Millisecond
		}
		return out
	}
	cases := []struct {
		name string
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one", ms(1), 50, time.Millisecond},
		{"p50 of 100", ms(100), 50, 50 * time.Millisecond},
		{"p99 of 100", ms(100), 99, 99 * time.Millisecond},
		{"p99 of 10", ms(10), 99, 10 * time.Millisecond},
		{"p90 of 10", ms(10), 90, 9 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.in, tc.p); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	addr := serve(t)
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"text report", []string{"-addr", addr, "-c", "2", "-n", "10", "-token-env", "LOAD_TEST_TOKEN"}, 0, "throughput"},
		{"json report", []string{"-addr", addr, "-c", "2", "-n", "10", "-json", "-token-env", "LOAD_TEST_TOKEN"}, 0, `"executions": 10`},
		{"refused at once", []string{"-addr", addr, "-c", "1", "-d", "1h", "-token-env", "LOAD_TEST_NO_SUCH_VAR"}, 1,
			"ptc-load: ptcd at " + addr + ": it refused the first call, so it would refuse them all: UNAUTHENTICATED: "},
		{"bad input", []string{"-addr", addr, "-d", "1h", "-input", "{", "-token-env", "LOAD_TEST_TOKEN"}, 1,
			"ptc-load: ptcd at " + addr + ": it refused the first call, so it would refuse them all: INVALID_ARGUMENT: "},
		{"bad concurrency", []string{"-c", "0"}, 2, "-c must be"},
		{"missing script", []string{"-script", "/does/not/exist.js"}, 2, "exist.js"},
		{"extra argument", []string{"x"}, 2, "unexpected"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runLoad(t, tc.args...)
			if code != tc.code || !strings.Contains(out+errs, tc.out) {
				t.Fatalf("exit %d\nout: %s\nerr: %s", code, out, errs)
			}
			if strings.Contains(strings.Join(tc.args, " "), "-json") {
				var r Report
				if err := json.Unmarshal([]byte(out), &r); err != nil || r.OK != 10 {
					t.Fatalf("%v %+v", err, r)
				}
			}
		})
	}
}

// runLoad runs the built ptc-load with args (and LOAD_TEST_TOKEN=tok).
// Tests give runs that must stop at once an hour's duration; the command
// is killed after two minutes so that such a test fails instead of
// hanging.
func runLoad(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, loadBin, args...)
	cmd.Env = append(os.Environ(), "LOAD_TEST_TOKEN=tok")
	return testenv.Run(t, cmd)
}

// TestDeadAddress runs ptc-load against an address where nothing listens,
// for an hour: it must stop at once with the connection error and print
// no report (were it to count the refused calls as executions, the test
// would time out).
func TestDeadAddress(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	code, out, errs := runLoad(t, "-addr", addr, "-c", "16", "-d", "1h")
	want := regexp.MustCompile(`^ptc-load: ptcd at ` + regexp.QuoteMeta(addr) + `: cannot reach it: connection error: .*connection refused"?\n$`)
	if code != 1 || out != "" || !want.MatchString(errs) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1, nothing, %s", code, out, errs, want)
	}
}

// TestNotRunnerService runs ptc-load against a gRPC server without
// RunnerService: it stops at once and says so.
func TestNotRunnerService(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	done := make(chan struct{})
	// The server goroutine ends when gs.Stop closes the listener.
	go func() { _ = gs.Serve(lis); close(done) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	code, out, errs := runLoad(t, "-addr", lis.Addr().String(), "-d", "1h")
	want := "ptc-load: ptcd at " + lis.Addr().String() + ": it does not serve ptc.v1.RunnerService: UNIMPLEMENTED: unknown service ptc.v1.RunnerService\n"
	if code != 1 || out != "" || errs != want {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, out, errs, want)
	}
}
