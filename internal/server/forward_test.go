package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// owners is an in-memory owner directory; owner, when set, answers for
// every pause.
type owners struct {
	mu    sync.Mutex
	by    map[string]string
	owner string
}

func (o *owners) Owner(_ context.Context, id string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.owner != "" {
		return o.owner, nil
	}
	return o.by[id], nil
}

func (o *owners) claim(addr string) func(context.Context, string, time.Time) {
	return func(_ context.Context, id string, _ time.Time) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.by[id] = addr
	}
}

var forwardSecret = []byte("0123456789abcdef0123456789abcdef")

// forwardReplica serves a replica named name on lis: a tool "where"
// answers its name, parked executions are claimed in dir under its
// address, and Resumes go through a Forwarder.
func forwardReplica(t *testing.T, name string, lis net.Listener, dir *owners, timeout time.Duration) {
	t.Helper()
	reg := tools.NewRegistry()
	where := tools.Tool{Definition: tools.Definition{Name: "where"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
		return json.RawMessage(`"` + name + `"`), nil
	}}
	if err := reg.Register(where); err != nil {
		t.Fatal(err)
	}
	dm, err := durable.New(durable.Config{Keys: []durable.Key{{ID: "k1", Secret: forwardSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Registry: reg, Durable: dm, Outcomes: wire.Outcomes, OnPark: dir.claim(lis.Addr().String())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Close() })
	fwd := server.NewForwarder(server.ForwardConfig{Self: lis.Addr().String(), Owners: dir,
		Keys: [][]byte{server.ForwardKey(forwardSecret)}, ConnectTimeout: 2 * time.Second, Timeout: timeout})
	t.Cleanup(func() { _ = fwd.Close() })
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(fwd.Unary))
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	t.Cleanup(func() { gs.Stop(); <-done })
}

func forwardClient(t *testing.T, addr string) ptcv1.RunnerServiceClient {
	t.Helper()
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return ptcv1.NewRunnerServiceClient(c)
}

// TestForwardResume: a Resume reaching another replica runs on the one
// that parked the execution; a forwarded call is never forwarded again;
// an owner that cannot be reached (nothing listens, or it accepts and
// never speaks HTTP/2 within the connect timeout) leaves the Resume where
// it landed; a forwarded call outlasting the forwarding timeout ends
// with DEADLINE_EXCEEDED; a forged forwarding header is refused.
func TestForwardResume(t *testing.T) {
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	la, lb, lc := listen(), listen(), listen()
	dead := listen()
	deadAddr := dead.Addr().String()
	_ = dead.Close()
	// silent accepts connections and never answers.
	silent := listen()
	accepted := make(chan []net.Conn, 1)
	// The acceptor ends when silent is closed, handing over its conns.
	go func() {
		var conns []net.Conn
		for {
			c, err := silent.Accept()
			if err != nil {
				accepted <- conns
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = silent.Close()
		for _, c := range <-accepted {
			_ = c.Close()
		}
	})
	dir := &owners{by: map[string]string{}}
	forwardReplica(t, "a", la, dir, 0)
	forwardReplica(t, "b", lb, dir, 0)
	forwardReplica(t, "c", lc, dir, time.Nanosecond)
	a, b, c := forwardClient(t, la.Addr().String()), forwardClient(t, lb.Addr().String()), forwardClient(t, lc.Addr().String())

	const src = `await tools.ask({}); return await tools.where({});`
	sign := func(cont string) string {
		m := hmac.New(sha256.New, server.ForwardKey(forwardSecret))
		m.Write([]byte(cont))
		return hex.EncodeToString(m.Sum(nil))
	}
	cases := []struct {
		name   string
		owner  string // the directory's answer for every pause; "" the claims
		via    ptcv1.RunnerServiceClient
		header func(cont string) string
		want   string
		code   codes.Code
	}{
		{"forwarded to the replica that parked it", "", b, nil, "a", codes.OK},
		{"owner gone: runs where it landed", deadAddr, b, nil, "b", codes.OK},
		{"owner silent: runs where it landed", silent.Addr().String(), b, nil, "b", codes.OK},
		{"a forwarded call is not forwarded again", la.Addr().String(), b, sign, "b", codes.OK},
		{"a forwarded call outlasting the timeout", "", c, nil, "", codes.DeadlineExceeded},
		{"a forged header is refused", "", b, func(string) string { return sign("another continuation") }, "", codes.Unauthenticated},
		{"a header that is not hex is refused", "", b, func(string) string { return "nope" }, "", codes.Unauthenticated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir.mu.Lock()
			dir.owner = tc.owner
			dir.mu.Unlock()
			ctx := context.Background()
			res, err := a.Execute(ctx, &ptcv1.ExecuteRequest{Script: js(src), Resumable: true,
				ClientTools: []*ptcv1.ToolDefinition{{Name: "ask"}}})
			if err != nil || res.GetState() != ptcv1.ExecutionState_EXECUTION_STATE_REQUIRES_ACTION {
				t.Fatalf("not paused: %v %v", err, res)
			}
			cont := res.GetContinuation()
			if tc.header != nil {
				ctx = metadata.AppendToOutgoingContext(ctx, server.ForwardedHeader, tc.header(cont))
			}
			out, err := tc.via.Resume(ctx, &ptcv1.ResumeRequest{Continuation: cont,
				Answers: []*ptcv1.ActionAnswer{{CallId: res.GetPendingActions()[0].GetCallId(), Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: `1`}}}})
			if status.Code(err) != tc.code {
				t.Fatalf("resume: %v, want %s", err, tc.code)
			}
			if tc.code == codes.OK && out.GetExecution().GetResultJson() != `"`+tc.want+`"` {
				t.Fatalf("resumed on %s, want %s (%v)", out.GetExecution().GetResultJson(), tc.want, out.GetExecution().GetError())
			}
		})
	}
}
