package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// TestSessionDeliversInScriptOrder: with logs and progress streamed, a
// client tool call reaches the client after the log line written just
// before it and after the call's own STARTED progress, as the script
// produced them — every time, for many calls in a row.
func TestSessionDeliversInScriptOrder(t *testing.T) {
	const calls = 50
	f := start(t)
	req := jsReq(fmt.Sprintf(`
		for (let i = 0; i < %d; i++) {
			console.log("before " + i);
			await tools.ask({i});
		}
		return "done"`, calls))
	req.StreamLogs, req.StreamProgress = true, true
	s, err := f.rpc.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: req, ClientTools: []*ptcv1.ToolDefinition{{Name: "ask"}}}}}); err != nil {
		t.Fatal(err)
	}
	var seen []string // what arrived since the last tool call
	n := 0
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.GetLog() != nil:
			seen = append(seen, "log "+m.GetLog().GetMessage())
		case m.GetProgress() != nil:
			p := m.GetProgress()
			if p.GetPhase() == ptcv1.ToolProgress_PHASE_STARTED {
				seen = append(seen, fmt.Sprintf("started #%d", p.GetSeq()))
			}
		case m.GetToolCall() != nil:
			tc := m.GetToolCall()
			want := []string{fmt.Sprintf("log before %d", n), fmt.Sprintf("started #%d", n+1)}
			if strings.Join(seen, ", ") != strings.Join(want, ", ") {
				t.Fatalf("tool call %d came after [%s], want after [%s]", n, strings.Join(seen, ", "), strings.Join(want, ", "))
			}
			seen, n = nil, n+1
			if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{
				CallId: tc.GetCallId(), Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: "1"}}}}); err != nil {
				t.Fatal(err)
			}
		case m.GetResult() != nil:
			if r := m.GetResult(); r.GetResultJson() != `"done"` || n != calls {
				t.Fatalf("result %v after %d calls", r, n)
			}
			return
		}
	}
}
