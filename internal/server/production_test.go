package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/metrics"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/testenv"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// panicService panics in every handler: a bug in a handler must not take
// the server down.
type panicService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (panicService) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	panic("handler bug")
}

func (panicService) FullDuplexCall(testgrpc.TestService_FullDuplexCallServer) error {
	panic("stream handler bug")
}

type prodConfig struct {
	authOn    bool
	tenants   []auth.Tenant
	admission admission.Config
	// authHook wraps the authenticator (to inject a panic).
	authHook func(next func(context.Context) (context.Context, error)) func(context.Context) (context.Context, error)
	tools    []tools.Tool
	// quiet discards the logs (benchmarks).
	quiet bool
}

type prod struct {
	rpc     ptcv1.RunnerServiceClient
	client  *ptc.Client
	test    testgrpc.TestServiceClient
	adm     *admission.Controller
	metrics *metrics.Metrics
	logs    *testenv.SyncBuffer
}

// startProd serves a runner with the demo tools behind the full
// interceptor chain, admission control and metrics.
func startProd(t testing.TB, pc prodConfig) *prod {
	t.Helper()
	r := newExecutor(t, append(demo.Tools(), pc.tools...)...)
	if pc.admission.MaxConcurrent == 0 {
		pc.admission = admission.Config{MaxConcurrent: 8, MaxQueue: 8, MaxWait: time.Minute}
	}
	adm, err := admission.New(pc.admission)
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.New(pc.authOn, pc.tenants)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(metrics.Gauges{Running: adm.Running, Queued: adm.Queued})
	logs := &testenv.SyncBuffer{}
	var w io.Writer = logs
	if pc.quiet {
		w = io.Discard
	}
	log := slog.New(slog.NewJSONHandler(w, nil))
	authFn := authn.Authenticate
	if pc.authHook != nil {
		authFn = pc.authHook(authFn)
	}
	gs := grpc.NewServer(server.Interceptors(server.ChainConfig{Log: log, Metrics: m, Auth: authFn, Limiter: auth.NewRateLimiter(authn)})...)
	ptcv1.RegisterRunnerServiceServer(gs, server.New(r, server.WithLogger(log), server.WithAdmission(adm), server.WithMetrics(m)))
	testgrpc.RegisterTestServiceServer(gs, panicService{})
	conn := serve(t, gs)
	return &prod{rpc: ptcv1.NewRunnerServiceClient(conn), client: ptc.NewClient(conn), test: testgrpc.NewTestServiceClient(conn), adm: adm, metrics: m, logs: logs}
}

func bearer(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// waitAdm blocks until cond holds, woken by every admission change.
func waitAdm(t *testing.T, c *admission.Controller, cond func() bool) {
	t.Helper()
	for {
		ch := c.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("admission state not reached")
		}
	}
}

// blockTool is a server tool that signals when entered and returns when
// release is closed.
func blockTool(entered chan<- struct{}, release <-chan struct{}) tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{Name: "block", Description: "Blocks until the test releases it.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			entered <- struct{}{}
			select {
			case <-release:
				return json.RawMessage(`"released"`), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
}

var tenantsAB = []auth.Tenant{
	{Name: "a", TokenHashes: []string{auth.HashToken("token-a")}, Tools: []string{"get_team_members", "block"},
		Ceilings: limits.Limits{Timeout: 2 * time.Second}},
	{Name: "b", TokenHashes: []string{auth.HashToken("token-b")}},
	{Name: "none", TokenHashes: []string{auth.HashToken("token-none")}, Tools: []string{"nothing.*"}},
}

func TestChainAuth(t *testing.T) {
	p := startProd(t, prodConfig{authOn: true, tenants: tenantsAB})
	cases := []struct {
		name string
		ctx  context.Context
		code codes.Code
	}{
		{"no token", context.Background(), codes.Unauthenticated},
		{"bad token", bearer("token-x"), codes.Unauthenticated},
		{"malformed header", metadata.AppendToOutgoingContext(context.Background(), "authorization", "token-a"), codes.Unauthenticated},
		{"good token", bearer("token-a"), codes.OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := p.rpc.Execute(tc.ctx, jsReq("return 1"))
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.code)
			}
			if err == nil && res.GetResultJson() != "1" {
				t.Fatal(res)
			}
			// The stream path authenticates alike.
			s, err := p.rpc.Session(tc.ctx)
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Send(startMsg("return 2"))
			m, err := s.Recv()
			if status.Code(err) != tc.code || (err == nil && m.GetResult().GetResultJson() != "2") {
				t.Fatalf("session: %v %v", m, err)
			}
		})
	}
	if !strings.Contains(p.logs.String(), `"tenant":"a"`) {
		t.Fatalf("the call log names no tenant: %s", p.logs.String())
	}
}

func TestTenantTools(t *testing.T) {
	p := startProd(t, prodConfig{authOn: true, tenants: tenantsAB})
	ctxA := bearer("token-a")
	lt, err := p.rpc.ListTools(ctxA, &ptcv1.ListToolsRequest{})
	if err != nil || len(lt.GetTools()) != 1 || lt.GetTools()[0].GetName() != "get_team_members" {
		t.Fatalf("ListTools for a: %v %v", lt, err)
	}
	lt, err = p.rpc.ListTools(bearer("token-b"), &ptcv1.ListToolsRequest{})
	if err != nil || len(lt.GetTools()) != 3 {
		t.Fatalf("ListTools for b: %v %v", lt, err)
	}
	cases := []struct {
		name    string
		ctx     context.Context
		allowed []string
		src     string
		code    codes.Code
		result  string
	}{
		{"allowed tool in set", ctxA, []string{"get_team_members"}, `return (await tools.get_team_members({department: "engineering"})).length`, codes.OK, "20"},
		{"allowed tool outside set", ctxA, []string{"get_expenses"}, `return 1`, codes.PermissionDenied, ""},
		{"empty allowed is the tenant's set", ctxA, nil, `try { await tools.get_expenses({employee_id: "x", quarter: 1}) } catch (e) { return e.code }`, codes.OK, `"unknown_tool"`},
		{"unrestricted tenant", bearer("token-b"), nil, `try { await tools.get_expenses({}) } catch (e) { return e.code }`, codes.OK, `"invalid_arguments"`},
		{"tenant with no tools runs without server tools", bearer("token-none"), nil,
			`try { await tools.get_team_members({department: "sales"}) } catch (e) { return e.code }`, codes.OK, `"unknown_tool"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := jsReq(tc.src)
			req.AllowedTools = tc.allowed
			res, err := p.rpc.Execute(tc.ctx, req)
			if status.Code(err) != tc.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, tc.code)
			}
			if err == nil && (res.GetError() != nil || res.GetResultJson() != tc.result) {
				t.Fatalf("result %s %v", res.GetResultJson(), res.GetError())
			}
		})
	}
}

func TestTenantLimitCeilings(t *testing.T) {
	p := startProd(t, prodConfig{authOn: true, tenants: tenantsAB})
	cases := []struct {
		name  string
		ctx   context.Context
		asked time.Duration
		want  time.Duration
	}{
		{"unset gets the tenant ceiling", bearer("token-a"), 0, 2 * time.Second},
		{"above the tenant ceiling is clamped", bearer("token-a"), time.Hour, 2 * time.Second},
		{"below is kept", bearer("token-a"), time.Second, time.Second},
		{"tenant without ceilings gets the server default", bearer("token-b"), 0, 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := jsReq("return 1")
			if tc.asked > 0 {
				req.Limits = &ptcv1.Limits{Timeout: durationpb.New(tc.asked)}
			}
			res, err := p.rpc.Execute(tc.ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.GetEffectiveLimits().GetTimeout().AsDuration(); got != tc.want {
				t.Fatalf("effective timeout %v, want %v", got, tc.want)
			}
		})
	}
	// The ceiling is enforced, not just reported: a script that outlives
	// it ends with TIMEOUT.
	res, err := p.rpc.Execute(bearer("token-a"), jsReq(`while (true) {}`))
	if err != nil || res.GetError().GetKind() != ptcv1.ErrorKind_ERROR_KIND_TIMEOUT && res.GetError().GetKind() != ptcv1.ErrorKind_ERROR_KIND_CPU_LIMIT {
		t.Fatalf("%v %v", res.GetError(), err)
	}
}

func retryInfo(t *testing.T, err error) time.Duration {
	t.Helper()
	st := status.Convert(err)
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	t.Fatalf("no RetryInfo in %v", err)
	return 0
}

// TestAdmissionQueue: one slot, one queue place. The first execution
// holds the slot (blocked in a tool), the second queues, the third is
// refused with RESOURCE_EXHAUSTED and a RetryInfo; when the first ends the
// queued one runs and reports its queue time.
func TestAdmissionQueue(t *testing.T) {
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	p := startProd(t, prodConfig{admission: admission.Config{MaxConcurrent: 1, MaxQueue: 1, MaxWait: time.Minute},
		tools: []tools.Tool{blockTool(entered, release)}})

	type out struct {
		res *ptcv1.ExecuteResponse
		err error
	}
	first, second := make(chan out, 1), make(chan out, 1)
	go func() {
		r, err := p.rpc.Execute(context.Background(), jsReq(`return await tools.block({})`))
		first <- out{r, err}
	}()
	<-entered // the first holds the only slot
	go func() {
		r, err := p.rpc.Execute(context.Background(), jsReq(`return "second"`))
		second <- out{r, err}
	}()
	waitAdm(t, p.adm, func() bool { return p.adm.Queued() == 1 })

	_, err := p.rpc.Execute(context.Background(), jsReq(`return "third"`))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "queue is full") {
		t.Fatalf("third: %v", err)
	}
	if d := retryInfo(t, err); d <= 0 {
		t.Fatalf("retry delay %v", d)
	}
	// The Go client reports the same refusal as a *ptc.Error with its code
	// and retry delay, from Execute and from Run.
	_, err = p.client.Execute(context.Background(), ptc.Request{Source: `return "fourth"`})
	var pe *ptc.Error
	if ptc.CodeOf(err) != ptc.ResourceExhausted || !errors.As(err, &pe) || pe.RetryAfter <= 0 ||
		!errors.Is(err, &ptc.Error{Code: ptc.ResourceExhausted}) {
		t.Fatalf("client Execute: %#v", err)
	}
	if _, err := p.client.Run(context.Background(), ptc.Request{Source: `return "fifth"`}); ptc.CodeOf(err) != ptc.ResourceExhausted {
		t.Fatalf("client Run: %v", err)
	}
	// A Session is admitted alike.
	s, err := p.rpc.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Send(startMsg(`return "session"`))
	if _, err := s.Recv(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("session: %v", err)
	} else {
		retryInfo(t, err)
	}

	close(release)
	if o := <-first; o.err != nil || o.res.GetResultJson() != `"released"` {
		t.Fatalf("first: %v %v", o.res, o.err)
	}
	o := <-second
	if o.err != nil || o.res.GetResultJson() != `"second"` {
		t.Fatalf("second: %v %v", o.res, o.err)
	}
	if q := o.res.GetStats().GetQueueTime().AsDuration(); q <= 0 {
		t.Fatalf("queue_time %v", q)
	}
	body := scrape(t, p.metrics)
	// Four refusals: the third Execute, the Session, the client's Execute and Run.
	for _, want := range []string{`ptc_admission_rejected_total{reason="queue_full"} 4`, `ptc_admission_wait_seconds_count 2`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestTenantQuota: a tenant at its concurrency quota waits (here until
// max_wait) while another tenant runs.
func TestTenantQuota(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	ts := []auth.Tenant{
		{Name: "a", TokenHashes: []string{auth.HashToken("token-a")}, MaxConcurrent: 1},
		{Name: "b", TokenHashes: []string{auth.HashToken("token-b")}},
	}
	p := startProd(t, prodConfig{authOn: true, tenants: ts, tools: []tools.Tool{blockTool(entered, release)},
		admission: admission.Config{MaxConcurrent: 4, MaxQueue: 4, MaxWait: 50 * time.Millisecond}})
	first := make(chan error, 1)
	go func() {
		_, err := p.rpc.Execute(bearer("token-a"), jsReq(`return await tools.block({})`))
		first <- err
	}()
	<-entered
	_, err := p.rpc.Execute(bearer("token-a"), jsReq(`return 1`))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "tenant a") {
		t.Fatalf("over quota: %v", err)
	}
	retryInfo(t, err)
	if res, err := p.rpc.Execute(bearer("token-b"), jsReq(`return 2`)); err != nil || res.GetResultJson() != "2" {
		t.Fatalf("other tenant: %v %v", res, err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestRateLimit(t *testing.T) {
	ts := []auth.Tenant{{Name: "slow", TokenHashes: []string{auth.HashToken("token-s")}, Rate: 0.001, Burst: 1}}
	p := startProd(t, prodConfig{authOn: true, tenants: ts})
	if _, err := p.rpc.Execute(bearer("token-s"), jsReq("return 1")); err != nil {
		t.Fatal(err)
	}
	_, err := p.rpc.Execute(bearer("token-s"), jsReq("return 1"))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "rate") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(scrape(t, p.metrics), "ptc_rate_limited_total 1") {
		t.Fatal("rate limit not counted")
	}
}

// TestPanics: a panicking tool handler, a panicking gRPC handler (unary
// and stream) and a panicking interceptor all leave the server serving;
// the gRPC ones become INTERNAL and are logged with their stack.
func TestPanics(t *testing.T) {
	boom := tools.Tool{Definition: tools.Definition{Name: "boom", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) { panic("tool bug") }}
	hook := func(next func(context.Context) (context.Context, error)) func(context.Context) (context.Context, error) {
		return func(ctx context.Context) (context.Context, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			if len(md.Get("x-test-panic")) > 0 {
				panic("interceptor bug")
			}
			return next(ctx)
		}
	}
	p := startProd(t, prodConfig{tools: []tools.Tool{boom}, authHook: hook})
	alive := func() {
		t.Helper()
		res, err := p.rpc.Execute(context.Background(), jsReq("return 42"))
		if err != nil || res.GetResultJson() != "42" {
			t.Fatalf("server not serving after a panic: %v %v", res, err)
		}
	}
	panicky := metadata.AppendToOutgoingContext(context.Background(), "x-test-panic", "1")

	t.Run("tool handler", func(t *testing.T) {
		res, err := p.rpc.Execute(context.Background(), jsReq(`try { await tools.boom({}) } catch (e) { return e.code }`))
		if err != nil || res.GetResultJson() != `"tool_panic"` {
			t.Fatalf("%v %v", res, err)
		}
		alive()
	})
	t.Run("unary handler", func(t *testing.T) {
		_, err := p.test.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		if status.Code(err) != codes.Internal {
			t.Fatalf("err = %v", err)
		}
		alive()
	})
	t.Run("stream handler", func(t *testing.T) {
		s, err := p.test.FullDuplexCall(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); status.Code(err) != codes.Internal {
			t.Fatalf("err = %v", err)
		}
		alive()
	})
	t.Run("unary interceptor", func(t *testing.T) {
		_, err := p.rpc.Execute(panicky, jsReq("return 1"))
		if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "interceptor bug") {
			t.Fatalf("err = %v (the panic value must not reach the caller)", err)
		}
		alive()
	})
	t.Run("stream interceptor", func(t *testing.T) {
		s, err := p.rpc.Session(panicky)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); status.Code(err) != codes.Internal {
			t.Fatalf("err = %v", err)
		}
		alive()
	})
	logs := p.logs.String()
	for _, want := range []string{"panic recovered", "handler bug", "interceptor bug", "goroutine"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q", want)
		}
	}
	if !strings.Contains(scrape(t, p.metrics), "ptc_panics_recovered_total 4") {
		t.Error("panics not counted")
	}
}

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	hs := httptest.NewServer(m.Handler(nil))
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExecutionMetrics: executions, tool calls, breaches and bytes are
// counted with bounded labels.
func TestExecutionMetrics(t *testing.T) {
	p := startProd(t, prodConfig{})
	for _, src := range []string{
		`return (await tools.get_team_members({department: "engineering"})).length`,
		`return 1`,
		`throw new Error("x")`,
		`while (true) {}`,
		`try { await tools.get_team_members({}) } catch (e) { return e.code }`,
		`try { await tools["no such tool"]({}) } catch (e) { return 0 }`,
	} {
		req := jsReq(src)
		if strings.HasPrefix(src, "while") {
			// Only the endless loop gets a short timeout: the others must
			// end ok however slow the machine.
			req.Limits = &ptcv1.Limits{Timeout: durationpb.New(200 * time.Millisecond)}
		}
		if _, err := p.rpc.Execute(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	body := scrape(t, p.metrics)
	for _, want := range []string{
		`ptc_executions_total{language="javascript",outcome="ok"} 4`,
		`ptc_executions_total{language="javascript",outcome="SCRIPT_ERROR"} 1`,
		`ptc_tool_calls_total{outcome="ok",tool="get_team_members"} 1`,
		`ptc_tool_calls_total{outcome="invalid_arguments",tool="get_team_members"} 1`,
		`ptc_execution_duration_seconds_count{language="javascript"} 6`,
		`ptc_tool_call_duration_seconds_count{tool="get_team_members"} 2`,
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Execute",grpc_service="ptc.v1.RunnerService",grpc_type="unary"} 6`,
		`ptc_worker_pool_size 0`,
		`ptc_admission_queue_depth 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !strings.Contains(body, `ptc_limit_breaches_total{limit="timeout"} 1`) && !strings.Contains(body, `ptc_limit_breaches_total{limit="cpu_time"} 1`) {
		t.Error("the breach of the endless loop is not counted")
	}
	if strings.Contains(body, "no such tool") {
		t.Error("a script-chosen name became a label value")
	}
	if strings.Contains(body, "ptc_tool_result_bytes_total 0\n") {
		t.Error("tool bytes not counted")
	}
}
