package server_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/idem"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// countTool is a server tool that counts its runs and answers the count.
func countTool(runs *atomic.Int64) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: "count"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
		n := runs.Add(1)
		b, _ := json.Marshal(n)
		return b, nil
	}}
}

// settable is a clock tests move.
type settable struct {
	mu sync.Mutex
	t  time.Time
}

func (c *settable) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *settable) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// idemServer serves the tools with the record of cfg (10 minutes, 100
// entries, 1 MiB, an hour's linger and the clock clk unless cfg says).
func idemServer(t *testing.T, cfg idem.Config, clk *settable, ts ...tools.Tool) (ptcv1.RunnerServiceClient, *server.Server) {
	t.Helper()
	return idemServerWith(t, cfg, clk, nil, ts...)
}

// idemServerWith is idemServer with more server options.
func idemServerWith(t *testing.T, cfg idem.Config, clk *settable, opts []server.Option, ts ...tools.Tool) (ptcv1.RunnerServiceClient, *server.Server) {
	t.Helper()
	if cfg.Retention == 0 {
		cfg.Retention = 10 * time.Minute
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 100
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 1 << 20
	}
	if cfg.Linger == 0 {
		cfg.Linger = time.Hour
	}
	cfg.Now = clk.now
	gs := grpc.NewServer()
	srv := server.New(newExecutor(t, ts...), append(opts, server.WithIdempotency(cfg))...)
	ptcv1.RegisterRunnerServiceServer(gs, srv)
	conn := serve(t, gs)
	// Detached executions end before the server's executor closes.
	t.Cleanup(srv.WaitDetached)
	return ptcv1.NewRunnerServiceClient(conn), srv
}

// countReq calls count once and returns its answer and the input.
func countReq(id string) *ptcv1.ExecuteRequest {
	return &ptcv1.ExecuteRequest{ExecutionId: id, InputJson: `{"x":1}`,
		Script: js(`const n = await tools.count({}); return {n, input};`)}
}

// TestExecuteIdempotent: an Execute repeated with its execution_id and
// the same request gets the first one's outcome without running it again,
// within the retention window and the bounds; another request under the
// id is ALREADY_EXISTS naming the field; other ids, another tenant's or a
// request without an id run.
func TestExecuteIdempotent(t *testing.T) {
	tests := []struct {
		name string
		cfg  idem.Config
		// second is the request repeated (countReq("a") when nil); wait
		// moves the clock between the two.
		second *ptcv1.ExecuteRequest
		wait   time.Duration
		// wantRuns is the tool's runs after both; wantCode and wantMsg the
		// second's status (OK: the same response as the first).
		wantRuns int64
		wantCode codes.Code
		wantMsg  string
	}{
		{name: "repeat", wantRuns: 1},
		{name: "repeat differing only in delivery", second: func() *ptcv1.ExecuteRequest {
			r := countReq("a")
			r.StreamLogs, r.StreamProgress, r.ProgressValues = true, true, true
			return r
		}(), wantRuns: 1},
		{name: "another input", second: func() *ptcv1.ExecuteRequest {
			r := countReq("a")
			r.InputJson = `{"x":2}`
			return r
		}(), wantRuns: 1, wantCode: codes.AlreadyExists, wantMsg: `execution_id "a" was used by another request (its input_json differs)`},
		{name: "other limits", second: func() *ptcv1.ExecuteRequest {
			r := countReq("a")
			r.Limits = &ptcv1.Limits{MaxToolCalls: 5}
			return r
		}(), wantRuns: 1, wantCode: codes.AlreadyExists, wantMsg: "(its limits differs)"},
		{name: "another id", second: countReq("b"), wantRuns: 2},
		{name: "no id", second: countReq(""), wantRuns: 2},
		{name: "within the window", wait: 10*time.Minute - time.Nanosecond, wantRuns: 1},
		{name: "the window ended", wait: 10 * time.Minute, wantRuns: 2},
		{name: "outcome over the byte bound", cfg: idem.Config{MaxBytes: 10}, wantRuns: 1, wantCode: codes.AlreadyExists,
			wantMsg: "was not kept: the server keeps at most 10 bytes of outcomes (idempotency.max_bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs atomic.Int64
			clk := &settable{t: time.Unix(0, 0)}
			c, _ := idemServer(t, tt.cfg, clk, countTool(&runs))
			first, err := c.Execute(context.Background(), countReq("a"))
			if err != nil || first.GetError() != nil {
				t.Fatalf("first: %v %v", err, first.GetError())
			}
			clk.add(tt.wait)
			second := tt.second
			if second == nil {
				second = countReq("a")
			}
			res, err := c.Execute(context.Background(), second)
			if status.Code(err) != tt.wantCode || !strings.Contains(status.Convert(err).Message(), tt.wantMsg) {
				t.Fatalf("second: %v, want %v %q", err, tt.wantCode, tt.wantMsg)
			}
			if runs.Load() != tt.wantRuns {
				t.Fatalf("count ran %d times, want %d", runs.Load(), tt.wantRuns)
			}
			if err == nil && tt.wantRuns == 1 && !proto.Equal(res, first) {
				t.Fatalf("a repeat got\n%v\nnot the first outcome\n%v", res, first)
			}
		})
	}
}

// TestExecuteIdempotentPerTenant: an id of one tenant never matches
// another's (nor one without a tenant).
func TestExecuteIdempotentPerTenant(t *testing.T) {
	var runs atomic.Int64
	srv := server.New(newExecutor(t, countTool(&runs)), server.WithIdempotency(idem.Config{Retention: time.Minute, MaxEntries: 10, MaxBytes: 1 << 20}))
	t.Cleanup(srv.WaitDetached)
	for i, ctx := range []context.Context{
		auth.WithTenant(context.Background(), &auth.Tenant{Name: "t1"}),
		auth.WithTenant(context.Background(), &auth.Tenant{Name: "t2"}),
		context.Background(),
		auth.WithTenant(context.Background(), &auth.Tenant{Name: "t1"}),
	} {
		res, err := srv.Execute(ctx, countReq("shared"))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"n":` + []string{"1", "2", "3", "1"}[i] + `,"input":{"x":1}}`
		if res.GetResultJson() != want {
			t.Fatalf("call %d: %s, want %s", i, res.GetResultJson(), want)
		}
	}
	if runs.Load() != 3 {
		t.Fatalf("%d runs, want 3 (t1, t2, no tenant; t1 again kept)", runs.Load())
	}
}

// TestExecuteIdempotentAfterCutOff: an Execute cut off while its tool
// runs (a dropped connection) goes on without its call; the retry, and a
// concurrent duplicate, wait for it and get its outcome; the tool ran once.
func TestExecuteIdempotentAfterCutOff(t *testing.T) {
	var runs atomic.Int64
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c, _ := idemServer(t, idem.Config{}, &settable{}, holdTool(&runs, entered, release))
	req := &ptcv1.ExecuteRequest{ExecutionId: "cut", Script: js(`return await tools.hold({});`)}

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Execute(ctx, req)
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Fatalf("cut off: %v", err)
	}

	type answer struct {
		res *ptcv1.ExecuteResponse
		err error
	}
	answers := make(chan answer, 2)
	for range 2 {
		go func() {
			res, err := c.Execute(context.Background(), req)
			answers <- answer{res, err}
		}()
	}
	close(release)
	for range 2 {
		a := <-answers
		if a.err != nil || a.res.GetResultJson() != `"held"` {
			t.Fatalf("retry: %v %v", a.err, a.res)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("hold ran %d times", runs.Load())
	}
}

// TestExecuteAbandoned: an Execute whose every caller gave up and none
// came back within the linger is cancelled; a later repeat gets its
// CANCELLED outcome, without running it again.
func TestExecuteAbandoned(t *testing.T) {
	var runs atomic.Int64
	entered := make(chan struct{}, 1)
	c, srv := idemServer(t, idem.Config{Linger: time.Nanosecond}, &settable{}, holdTool(&runs, entered, make(chan struct{})))
	req := &ptcv1.ExecuteRequest{ExecutionId: "gone", Script: js(`return await tools.hold({});`)}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Execute(ctx, req)
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Fatalf("cut off: %v", err)
	}
	// The execution ends once abandoned.
	srv.WaitDetached()
	res, err := c.Execute(context.Background(), req)
	if err != nil || res.GetError().GetKind() != ptcv1.ErrorKind_ERROR_KIND_CANCELLED || runs.Load() != 1 {
		t.Fatalf("repeat: %v %v, %d runs", err, res, runs.Load())
	}
}

// TestSessionIdempotent: a Session repeated with its execution_id and the
// same request gets the first one's result without calling the client
// tool again; other client tools under the id are ALREADY_EXISTS.
func TestSessionIdempotent(t *testing.T) {
	c, _ := idemServer(t, idem.Config{}, &settable{})
	start := func(tool string) *ptcv1.SessionStart {
		return &ptcv1.SessionStart{Execute: &ptcv1.ExecuteRequest{ExecutionId: "s", Script: js(`return await tools.` + tool + `({});`)},
			ClientTools: []*ptcv1.ToolDefinition{{Name: tool}}}
	}
	calls := 0
	session := func(st *ptcv1.SessionStart) (*ptcv1.ExecuteResponse, error) {
		s, err := c.Session(context.Background())
		if err != nil {
			return nil, err
		}
		if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: st}}); err != nil {
			return nil, err
		}
		for {
			m, err := s.Recv()
			if err == io.EOF {
				t.Fatal("no result")
			}
			if err != nil {
				return nil, err
			}
			if tc := m.GetToolCall(); tc != nil {
				calls++
				_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{
					CallId: tc.GetCallId(), Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `"served"`}}}})
			}
			if r := m.GetResult(); r != nil {
				return r, s.CloseSend()
			}
		}
	}
	first, err := session(start("pick"))
	if err != nil || first.GetResultJson() != `"served"` {
		t.Fatalf("first: %v %v", err, first)
	}
	again, err := session(start("pick"))
	if err != nil || !proto.Equal(again, first) || calls != 1 {
		t.Fatalf("repeat: %v, %d calls, %v", err, calls, again)
	}
	other := start("pick")
	other.ClientTools[0].Description = "another"
	if _, err := session(other); status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "SessionStart.client_tools differs") {
		t.Fatalf("other client tools: %v", err)
	}
}

// TestSessionDroppedWhileClientToolRuns: a Session whose RPC is dropped
// (no cancel message) while the script waits for a client tool ends
// CANCELLED, and a retry under its execution_id gets that outcome: when
// the client resets the stream, and when it half-closes it right before
// (as Node's http2, and so grpc-js, drops a stream).
func TestSessionDroppedWhileClientToolRuns(t *testing.T) {
	for _, tc := range []struct {
		name      string
		halfClose bool
	}{{"reset", false}, {"half-close then reset", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := idemServerWith(t, idem.Config{}, &settable{}, []server.Option{server.WithHalfCloseGrace(time.Hour)})
			st := &ptcv1.SessionStart{Execute: &ptcv1.ExecuteRequest{ExecutionId: "dropped", Script: js(`return await tools.ask({});`)},
				ClientTools: []*ptcv1.ToolDefinition{{Name: "ask"}}}
			ctx, cancel := context.WithCancel(context.Background())
			s := startSession(ctx, t, c, st)
			for {
				m, err := s.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if m.GetToolCall() != nil {
					break
				}
			}
			if tc.halfClose {
				_ = s.CloseSend()
			}
			cancel()
			again := startSession(context.Background(), t, c, st)
			for {
				m, err := again.Recv()
				if err != nil {
					t.Fatalf("retry: %v", err)
				}
				if m.GetToolCall() != nil {
					t.Fatal("the retry ran the script again")
				}
				if r := m.GetResult(); r != nil {
					if r.GetError().GetKind() != ptcv1.ErrorKind_ERROR_KIND_CANCELLED {
						t.Fatalf("retry got %v, want CANCELLED", r.GetError())
					}
					return
				}
			}
		})
	}
}

// startSession opens a Session and sends its start message.
func startSession(ctx context.Context, t *testing.T, c ptcv1.RunnerServiceClient, st *ptcv1.SessionStart) ptcv1.RunnerService_SessionClient {
	t.Helper()
	s, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: st}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestExecuteIdempotentWaitersBounded: at most MaxWaiters callers wait
// for one running execution, its first caller included; the others are
// refused RESOURCE_EXHAUSTED at once, saying that it still runs, and get
// its outcome by retrying once it ended.
func TestExecuteIdempotentWaitersBounded(t *testing.T) {
	const waiters, callers = 3, 8
	var runs atomic.Int64
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c, _ := idemServer(t, idem.Config{MaxWaiters: waiters}, &settable{}, holdTool(&runs, entered, release))
	req := &ptcv1.ExecuteRequest{ExecutionId: "busy", Script: js(`return await tools.hold({});`)}
	type answer struct {
		res *ptcv1.ExecuteResponse
		err error
	}
	answers := make(chan answer, callers)
	call := func() {
		res, err := c.Execute(context.Background(), req)
		answers <- answer{res, err}
	}
	go call()
	<-entered
	for range callers - 1 {
		go call()
	}
	// Every caller either waits or is refused; callers - waiters are.
	for range callers - waiters {
		a := <-answers
		if status.Code(a.err) != codes.ResourceExhausted || !strings.Contains(status.Convert(a.err).Message(), `execution "busy" is still running and 3 callers already wait`) {
			t.Fatalf("a caller past the bound: %v", a.err)
		}
	}
	close(release)
	for range waiters {
		if a := <-answers; a.err != nil || a.res.GetResultJson() != `"held"` {
			t.Fatalf("a waiting caller: %v %v", a.err, a.res)
		}
	}
	if res, err := c.Execute(context.Background(), req); err != nil || res.GetResultJson() != `"held"` {
		t.Fatalf("a retry after the end: %v %v", err, res)
	}
	if runs.Load() != 1 {
		t.Fatalf("hold ran %d times", runs.Load())
	}
}
