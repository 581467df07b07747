package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/durable/redistest"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// holdTool is a server tool that counts its runs, signals entered and
// returns when release is closed.
func holdTool(runs *atomic.Int64, entered chan<- struct{}, release <-chan struct{}) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: "hold"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		runs.Add(1)
		entered <- struct{}{}
		select {
		case <-release:
			return json.RawMessage(`"held"`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

// pauseHold starts a resumable execution that pauses at the client tool
// pick and then calls hold; it returns the Resume request that answers
// the pause.
func pauseHold(t *testing.T, c ptcv1.RunnerServiceClient) *ptcv1.ResumeRequest {
	t.Helper()
	res, err := c.Execute(context.Background(), &ptcv1.ExecuteRequest{Script: js(`
		const who = await tools.pick({});
		const h = await tools.hold({});
		return {who, h};`), Resumable: true, ClientTools: []*ptcv1.ToolDefinition{{Name: "pick"}}})
	if err != nil || len(res.GetPendingActions()) != 1 {
		t.Fatalf("not paused: %v %v", err, res)
	}
	return &ptcv1.ResumeRequest{Continuation: res.GetContinuation(), Answers: []*ptcv1.ActionAnswer{
		{CallId: res.GetPendingActions()[0].GetCallId(), Outcome: &ptcv1.ActionAnswer_OutputJson{OutputJson: `"ana"`}}}}
}

// cutOff sends req with a context cancelled once the held tool runs, and
// returns when the call ended (CANCELLED).
func cutOff(t *testing.T, c ptcv1.RunnerServiceClient, req *ptcv1.ResumeRequest, entered <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Resume(ctx, req)
		errc <- err
	}()
	<-entered
	cancel()
	if err := <-errc; status.Code(err) != codes.Canceled {
		t.Fatalf("cut off: %v", err)
	}
}

// TestResumeRetryOverGRPC: a Resume cut off while a server tool after the
// pause point runs loses nothing: the retry with the same continuation
// and answers returns the whole outcome, every later retry the identical
// response; the tool ran once and the execution is counted once.
func TestResumeRetryOverGRPC(t *testing.T) {
	var runs atomic.Int64
	entered, release := make(chan struct{}, 1), make(chan struct{})
	p := startProd(t, prodConfig{tools: []tools.Tool{holdTool(&runs, entered, release)}})
	req := pauseHold(t, p.rpc)
	cutOff(t, p.rpc, req, entered)

	type reply struct {
		res *ptcv1.ResumeResponse
		err error
	}
	retried := make(chan reply, 1)
	go func() {
		res, err := p.rpc.Resume(context.Background(), req)
		retried <- reply{res, err}
	}()
	close(release)
	r := <-retried
	if r.err != nil || r.res.GetExecution().GetResultJson() != `{"who":"ana","h":"held"}` || r.res.GetExecution().GetStats().GetToolCalls() != 2 {
		t.Fatalf("retry: %v %v", r.err, r.res)
	}
	again, err := p.rpc.Resume(context.Background(), req)
	if err != nil || !proto.Equal(again, r.res) {
		t.Fatalf("a later retry differs: %v\n%v\n%v", err, again, r.res)
	}
	other := proto.Clone(req).(*ptcv1.ResumeRequest)
	other.Answers[0].Outcome = &ptcv1.ActionAnswer_OutputJson{OutputJson: `"bo"`}
	_, err = p.rpc.Resume(context.Background(), other)
	if status.Code(err) != codes.FailedPrecondition || reasonOf(err) != "CONTINUATION_USED" || !strings.Contains(err.Error(), "other answers") {
		t.Fatalf("other answers: %v", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the held tool ran %d times", runs.Load())
	}
	body := scrape(t, p.metrics)
	for _, want := range []string{
		`ptc_execution_segments_total{language="javascript",outcome="REQUIRES_ACTION"} 1`,
		`ptc_execution_segments_total{language="javascript",outcome="ok"} 1`,
		`ptc_executions_total{language="javascript",outcome="ok"} 1`,
		`ptc_tool_calls_total{outcome="ok",tool="hold"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if !strings.Contains(p.logs.String(), `"resume_retry":true`) {
		t.Error("no retry in the logs")
	}
}

// replica serves a ptc server whose continuations live in the Redis store
// at url (under prefix), as one of several replicas.
func replica(t *testing.T, url, prefix string, ts ...tools.Tool) ptcv1.RunnerServiceClient {
	t.Helper()
	store, err := durable.OpenRedis(context.Background(), url, prefix)
	if err != nil {
		t.Fatal(err)
	}
	m, err := durable.New(durable.Config{Keys: []durable.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	for _, tl := range ts {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := executor.New(executor.Config{Registry: reg, Durable: m, Outcomes: wire.Outcomes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the server stopped
		_ = ex.Close()
		_ = m.Close()
	})
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	return ptcv1.NewRunnerServiceClient(serve(t, gs))
}

// TestResumeRetryAcrossReplicas: two servers share a Redis store. A
// Resume cut off on the first goes on there; a retry on the second is
// told it is in progress (RESUME_IN_PROGRESS) until the outcome is kept,
// then gets it, identical to the first's.
func TestResumeRetryAcrossReplicas(t *testing.T) {
	url := redistest.Start(t)
	var runs atomic.Int64
	entered, release := make(chan struct{}, 1), make(chan struct{})
	hold := holdTool(&runs, entered, release)
	prefix := fmt.Sprintf("retry-%d:", time.Now().UnixNano())
	a, b := replica(t, url, prefix, hold), replica(t, url, prefix, hold)
	req := pauseHold(t, a)
	cutOff(t, a, req, entered)
	_, err := b.Resume(context.Background(), req)
	if status.Code(err) != codes.Unavailable || reasonOf(err) != "RESUME_IN_PROGRESS" || !strings.Contains(err.Error(), "retry shortly") {
		t.Fatalf("retry elsewhere while it runs: %v", err)
	}
	close(release)
	// A retry on the first replica waits for its resume (or gets its
	// kept outcome); from then on the outcome is in the store.
	fromA, err := a.Resume(context.Background(), req)
	if err != nil || fromA.GetExecution().GetResultJson() != `{"who":"ana","h":"held"}` {
		t.Fatalf("retry on the first replica: %v %v", err, fromA)
	}
	fromB, err := b.Resume(context.Background(), req)
	if err != nil || !proto.Equal(fromA, fromB) {
		t.Fatalf("retry on the second replica: %v\n%v\n%v", err, fromB, fromA)
	}
	if runs.Load() != 1 {
		t.Fatalf("the held tool ran %d times", runs.Load())
	}
}
