package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestSessionProgressSlowReader: a client that reads nothing until the
// script has made all its calls (and whose flow-control window is small,
// so the server's progress queue fills) still gets every call accounted
// for: the progress delivered plus the dropped counts they carry equal two
// events per call, and the newest event arrives, so drops at the end are
// counted too. Log lines all arrive, in order.
func TestSessionProgressSlowReader(t *testing.T) {
	const calls = 5000
	var once sync.Once
	ended := make(chan struct{})
	end := tools.Tool{Definition: tools.Definition{Name: "script_end", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			once.Do(func() { close(ended) })
			return json.RawMessage(`true`), nil
		}}
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, server.New(newExecutor(t, append(demo.Tools(), end)...)))
	// A fixed window: the transport buffers at most 64 KiB for a client
	// that does not read.
	conn := serve(t, gs, grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	rpc := ptcv1.NewRunnerServiceClient(conn)

	for _, logs := range []bool{false, true} {
		t.Run(fmt.Sprintf("logs=%v", logs), func(t *testing.T) {
			once, ended = sync.Once{}, make(chan struct{})
			line := ""
			if logs {
				line = `console.log("line " + i);`
			}
			src := fmt.Sprintf(`for (let i = 0; i < %d; i++) { %s await tools.get_budget_by_level({level: "mid"}) } await tools.script_end({}); return 1`, calls, line)
			req := jsReq(src)
			req.StreamProgress, req.StreamLogs = true, logs
			req.Limits = &ptcv1.Limits{MaxToolCalls: calls + 1, MaxLogEntries: calls, MaxLogBytes: 1 << 20}
			s, err := rpc.Session(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: req}}}); err != nil {
				t.Fatal(err)
			}
			<-ended // the client reads only once the script made every call
			var delivered, dropped, lines int
			var last *ptcv1.ToolProgress
			for {
				m, err := s.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if p := m.GetProgress(); p != nil {
					delivered++
					dropped += int(p.GetDropped())
					last = p
					continue
				}
				if l := m.GetLog(); l != nil {
					if l.GetMessage() != fmt.Sprintf("line %d", lines) {
						t.Fatalf("log line %d arrived as %q", lines, l.GetMessage())
					}
					lines++
					continue
				}
				res := m.GetResult()
				if res == nil {
					t.Fatalf("unexpected message %v", m)
				}
				if res.GetError() != nil || res.GetStats().GetToolCalls() != calls+1 {
					t.Fatalf("result %v", res)
				}
				break
			}
			if want := 2 * (calls + 1); delivered+dropped != want {
				t.Fatalf("%d progress delivered + %d counted dropped, want %d", delivered, dropped, want)
			}
			if dropped == 0 {
				t.Fatalf("nothing dropped: the test did not fill the queue")
			}
			if last.GetTool() != "script_end" || last.GetPhase() != ptcv1.ToolProgress_PHASE_FINISHED {
				t.Fatalf("the last progress delivered is %v, want script_end finished", last)
			}
			if logs && lines != calls {
				t.Fatalf("%d log lines, want %d", lines, calls)
			}
			t.Logf("%d delivered, %d dropped", delivered, dropped)
		})
	}
}
