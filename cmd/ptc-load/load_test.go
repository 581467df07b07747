package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/ptcrun/ptc/internal/executor"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
		{"no token", Config{Concurrency: 2, Duration: time.Minute, MaxExecutions: 6, Source: "return 1", CallTimeout: time.Minute}, "grpc_Unauthenticated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), conn, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Executions != tc.cfg.MaxExecutions || rep.Outcomes[tc.outcome] != tc.cfg.MaxExecutions {
				t.Fatalf("report %+v", rep)
			}
			if rep.P50 <= 0 || rep.P50 > rep.P90 || rep.P90 > rep.P99 || rep.P99 > rep.Max || rep.PerSecond <= 0 {
				t.Fatalf("latencies %+v", rep)
			}
		})
	}
}

func TestRunStopsAtDuration(t *testing.T) {
	conn := dial(t, serve(t))
	rep, err := Run(context.Background(), conn, Config{Concurrency: 2, Duration: 100 * time.Millisecond, Source: "return 1", CallTimeout: time.Minute, Token: "tok"})
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
	t.Setenv("LOAD_TEST_TOKEN", "tok")
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"text report", []string{"-addr", addr, "-c", "2", "-n", "10", "-token-env", "LOAD_TEST_TOKEN"}, 0, "throughput"},
		{"json report", []string{"-addr", addr, "-c", "2", "-n", "10", "-json", "-token-env", "LOAD_TEST_TOKEN"}, 0, `"executions": 10`},
		{"all refused", []string{"-addr", addr, "-c", "1", "-n", "2", "-token-env", "LOAD_TEST_NO_SUCH_VAR"}, 1, "grpc_Unauthenticated=2"},
		{"bad concurrency", []string{"-c", "0"}, 2, "-c must be"},
		{"missing script", []string{"-script", "/does/not/exist.js"}, 2, "exist.js"},
		{"extra argument", []string{"x"}, 2, "unexpected"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.out) {
				t.Fatalf("exit %d\nout: %s\nerr: %s", code, out.String(), errb.String())
			}
			if strings.Contains(strings.Join(tc.args, " "), "-json") {
				var r Report
				if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.OK != 10 {
					t.Fatalf("%v %+v", err, r)
				}
			}
		})
	}
}
