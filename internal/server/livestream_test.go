package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/runtime/worker"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// serveExecutor serves ex on a loopback listener and returns a client.
func serveExecutor(tb testing.TB, cfg executor.Config) ptcv1.RunnerServiceClient {
	tb.Helper()
	reg := tools.NewRegistry()
	for _, t := range demo.Tools() {
		if err := reg.Register(t); err != nil {
			tb.Fatal(err)
		}
	}
	cfg.Registry = reg
	cfg.Outcomes = wire.Outcomes
	ex, err := executor.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ex.Close() }) // after the server stopped
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	return ptcv1.NewRunnerServiceClient(serve(tb, gs))
}

// streamSession runs req as a Session with stream_logs and returns the log
// lines received before the result, and the result.
func streamSession(ctx context.Context, c ptcv1.RunnerServiceClient, req *ptcv1.ExecuteRequest) ([]string, *ptcv1.ExecuteResponse, error) {
	req.StreamLogs = true
	s, err := c.Session(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: req}}}); err != nil {
		return nil, nil, err
	}
	var lines []string
	for {
		m, err := s.Recv()
		if err != nil {
			return lines, nil, err
		}
		switch msg := m.GetMsg().(type) {
		case *ptcv1.SessionResponse_Log:
			lines = append(lines, msg.Log.GetMessage())
		case *ptcv1.SessionResponse_Result:
			return lines, msg.Result, nil
		}
	}
}

// TestSessionStreamsEveryLog: with stream_logs every console entry the
// execution kept reaches the Session stream, in order, before the result
// — entries written just before return included — over 120 sessions (8
// at a time) per engine; and a flood delivers exactly the entries the log
// limits keep.
func TestSessionStreamsEveryLog(t *testing.T) {
	engines := []struct {
		name string
		cfg  executor.Config
	}{
		{"engine", executor.Config{}},
		{"worker", executor.Config{Workers: &worker.Config{Workers: 2, MaxWorkers: 8}}},
	}
	scripts := []struct {
		name, src string
		want      int
		truncated bool
	}{
		{"before return", `for (let i = 0; i < 20; i++) console.log("line " + i); return 1`, 20, false},
		{"around awaits", `for (let i = 0; i < 10; i++) { console.log("line " + i); await tools.get_budget_by_level({level: "junior"}) } for (let i = 10; i < 20; i++) console.log("line " + i); return 1`, 20, false},
		{"after a failure", `for (let i = 0; i < 20; i++) console.error("line " + i); throw new Error("x")`, 20, false},
		{"more than a send queue", `for (let i = 0; i < 600; i++) console.log("line " + i); return 1`, 600, false},
		{"flood past max_log_entries", `for (let i = 0; i < 1e5; i++) console.log("line " + i); return 1`, 1000, true},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			c := serveExecutor(t, e.cfg)
			for _, sc := range scripts {
				t.Run(sc.name, func(t *testing.T) {
					sessions := 120
					if sc.want > 100 {
						sessions = 12
					}
					var wg sync.WaitGroup
					sem := make(chan struct{}, 8)
					errs := make(chan string, sessions)
					for i := 0; i < sessions; i++ {
						wg.Add(1)
						sem <- struct{}{}
						// One goroutine per session; it ends with the session.
						go func() {
							defer wg.Done()
							defer func() { <-sem }()
							lines, res, err := streamSession(context.Background(), c, jsReq(sc.src))
							if err != nil {
								errs <- err.Error()
								return
							}
							if problem := checkStreamed(lines, res, sc.want, sc.truncated); problem != "" {
								errs <- problem
							}
						}()
					}
					wg.Wait()
					close(errs)
					n := 0
					for p := range errs {
						if n++; n <= 3 {
							t.Error(p)
						}
					}
					if n > 0 {
						t.Errorf("%d of %d sessions lost or reordered live log lines", n, sessions)
					}
				})
			}
		})
	}
}

// checkStreamed compares the streamed lines with the result's logs.
func checkStreamed(lines []string, res *ptcv1.ExecuteResponse, want int, truncated bool) string {
	if len(res.GetLogs()) != want || res.GetLogsTruncated() != truncated {
		return fmt.Sprintf("the result holds %d logs (truncated %v), want %d (%v)", len(res.GetLogs()), res.GetLogsTruncated(), want, truncated)
	}
	if len(lines) != len(res.GetLogs()) {
		return fmt.Sprintf("%d of %d log lines streamed before the result", len(lines), len(res.GetLogs()))
	}
	for i, l := range lines {
		if l != res.GetLogs()[i].GetMessage() || !strings.HasPrefix(l, "line ") {
			return fmt.Sprintf("line %d streamed as %q, the result has %q", i, l, res.GetLogs()[i].GetMessage())
		}
	}
	return ""
}
