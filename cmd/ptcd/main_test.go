package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ptcrun/ptc"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startPtcd(t *testing.T, args ...string) (addr string, stop func() int, logs *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	logs = &syncBuffer{}
	code := make(chan int, 1)
	go func() { code <- run(ctx, append([]string{"--listen", "127.0.0.1:0"}, args...), logs, ready) }()
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
}

// TestGracefulShutdown: an in-flight execution that outlives the grace
// period is cancelled and its caller gets CANCELLED; one that finishes in
// time gets its result.
func TestGracefulShutdown(t *testing.T) {
	addr, stop, _ := startPtcd(t, "--shutdown-grace", "200ms")
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
}

func TestFlags(t *testing.T) {
	o, err := parseFlags([]string{"--default-timeout", "2s", "--max-tool-calls", "7", "--demo-tools"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.defaults.Timeout != 2*time.Second || o.ceilings.MaxToolCalls != 7 || !o.demoTools {
		t.Fatalf("%+v", o)
	}
	for _, bad := range [][]string{{"--max-tool-calls", "-1"}, {"--nope"}, {"extra"}} {
		if _, err := parseFlags(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	// A default above its ceiling is refused at start-up.
	var out syncBuffer
	if code := run(context.Background(), []string{"--default-timeout", "10m", "--max-timeout", "1m"}, &out, nil); code != 2 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
}
