package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools/demo"
)

// sessionStream is a Session's server stream driven by the test: Recv
// gives the start message and then waits for the stream's end; Send
// delivers to a client that reads, or, when deaf, blocks until the stream
// ends, like a client that stopped reading.
type sessionStream struct {
	grpc.ServerStream
	ctx     context.Context
	start   *ptcv1.SessionRequest
	deaf    bool
	results int
	// pace is how long each live message takes the client to read.
	pace time.Duration
}

func (s *sessionStream) Context() context.Context { return s.ctx }

func (s *sessionStream) Recv() (*ptcv1.SessionRequest, error) {
	if m := s.start; m != nil {
		s.start = nil
		return m, nil
	}
	<-s.ctx.Done()
	return nil, status.FromContextError(s.ctx.Err()).Err()
}

func (s *sessionStream) Send(m *ptcv1.SessionResponse) error {
	if s.deaf {
		<-s.ctx.Done()
		return status.FromContextError(s.ctx.Err()).Err()
	}
	if m.GetResult() != nil {
		s.results++
		return nil
	}
	// A slow reader, not a synchronisation: the server's timers decide.
	time.Sleep(s.pace)
	return nil
}

// TestSessionResultUndelivered: a Session whose client does not read its
// result within the grace ends with DEADLINE_EXCEEDED, not with OK and no
// result; one whose client reads ends OK with the result.
func TestSessionResultUndelivered(t *testing.T) {
	for _, tc := range []struct {
		name        string
		deaf        bool
		grace       time.Duration
		code        codes.Code
		wantResults int
	}{
		// The grace runs out on the server's own timer while every send
		// is blocked: the outcome does not depend on how long it is.
		{"client stopped reading", true, time.Millisecond, codes.DeadlineExceeded, 0},
		{"client reads", false, time.Hour, codes.OK, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server.New(newExecutor(t, demo.Tools()...), server.WithResultGrace(tc.grace))
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			st := &sessionStream{ctx: ctx, deaf: tc.deaf, start: &ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{
				Start: &ptcv1.SessionStart{Execute: jsReq(`return "x".repeat(1000)`)}}}}
			err := srv.Session(st)
			if status.Code(err) != tc.code || st.results != tc.wantResults {
				t.Fatalf("Session: %v, %d results; want %v, %d", err, st.results, tc.code, tc.wantResults)
			}
			if tc.deaf {
				if msg := status.Convert(err).Message(); !strings.Contains(msg, "did not read its result") || !strings.Contains(msg, "not delivered") {
					t.Fatalf("message %q", msg)
				}
			}
		})
	}
}

// TestSessionSlowReader: once its execution ended, a Session waits for a
// client that reads its queued log lines slowly for as long as each line
// comes within the grace, up to six graces in all: a client reading 15
// lines at 100 ms each (1.5 s) gets its result under a 1 s grace; one
// reading 40 lines at 10 ms each does not under a 20 ms grace (0.4 s
// against 0.12 s), and ends DEADLINE_EXCEEDED.
func TestSessionSlowReader(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lines       int
		pace, grace time.Duration
		code        codes.Code
		wantResults int
	}{
		{"reads each line within the grace", 15, 100 * time.Millisecond, time.Second, codes.OK, 1},
		{"reads past six graces", 40, 10 * time.Millisecond, 20 * time.Millisecond, codes.DeadlineExceeded, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server.New(newExecutor(t, demo.Tools()...), server.WithResultGrace(tc.grace))
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			req := jsReq(fmt.Sprintf(`for (let i = 0; i < %d; i++) console.log("line " + i); return 1`, tc.lines))
			req.StreamLogs = true
			st := &sessionStream{ctx: ctx, pace: tc.pace, start: &ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{
				Start: &ptcv1.SessionStart{Execute: req}}}}
			err := srv.Session(st)
			if status.Code(err) != tc.code || st.results != tc.wantResults {
				t.Fatalf("Session: %v, %d results; want %v, %d", err, st.results, tc.code, tc.wantResults)
			}
		})
	}
}
