package server_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// TestSessionApprovalsBounded: a script that starts many approval-gated
// calls at once has at most max_concurrent_tool_calls approval requests
// outstanding; the rest wait for a slot (they do not fail), and every call
// runs once it is approved.
func TestSessionApprovalsBounded(t *testing.T) {
	const calls, bound = 40, 3
	var runs atomic.Int64
	p := startProd(t, prodConfig{tools: []tools.Tool{sendTool(&runs)}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := p.rpc.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`const r = await Promise.all(Array.from({length: %d}, () => tools.send({})));
return r.filter(x => x === "sent").length`, calls)
	exec := &ptcv1.ExecuteRequest{Script: js(src), Limits: &ptcv1.Limits{MaxConcurrentToolCalls: bound}}
	if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: exec}}}); err != nil {
		t.Fatal(err)
	}
	// The client withholds its answers while bound requests are
	// outstanding: it first makes the server answer a probe (an answer for
	// no call, which draws a protocol error), so that any further approval
	// request the server would send is seen before the probe's answer; then
	// it approves the outstanding calls.
	approve := func(ids []string) {
		for _, id := range ids {
			if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ApprovalAnswer{ApprovalAnswer: &ptcv1.ActionAnswer{CallId: id,
				Outcome: &ptcv1.ActionAnswer_Approval{Approval: &ptcv1.Approval{Approved: true}}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var outstanding []string
	received, probes := 0, 0
	var final *ptcv1.ExecuteResponse
	for final == nil {
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("after %d approval requests: %v", received, err)
		}
		if final = m.GetResult(); final != nil {
			break
		}
		if m.GetProtocolError() != nil {
			probes++
			approve(outstanding)
			outstanding = outstanding[:0]
			continue
		}
		ar := m.GetApprovalRequest()
		if ar == nil {
			t.Fatalf("unexpected message %v", m)
		}
		received++
		outstanding = append(outstanding, ar.GetAction().GetCallId())
		switch {
		case len(outstanding) > bound:
			t.Fatalf("%d approval requests outstanding, more than max_concurrent_tool_calls %d", len(outstanding), bound)
		case received == calls:
			approve(outstanding)
			outstanding = outstanding[:0]
		case len(outstanding) == bound:
			approve([]string{"probe"})
		}
	}
	if final.GetError() != nil || final.GetResultJson() != fmt.Sprint(calls) {
		t.Fatalf("result %v", final)
	}
	if received != calls || runs.Load() != calls || probes != calls/bound {
		t.Fatalf("received %d approval requests, %d runs, %d probes; want %d, %d, %d", received, runs.Load(), probes, calls, calls, calls/bound)
	}
}
