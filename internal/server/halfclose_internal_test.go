package server

import (
	"context"
	"errors"
	"testing"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// streamCtx is a Session stream of which only the context is used.
type streamCtx struct {
	ptcv1.RunnerService_SessionServer
	ctx context.Context
}

func (s streamCtx) Context() context.Context { return s.ctx }

// TestHalfCloseThenReset: a half-close with a client call pending waits
// for the RPC's end within the grace; a reset in that window cancels the
// execution and leaves the call to the cancellation, a grace that runs
// out fails the call with "cancelled", and an execution that ends first
// ends the wait.
func TestHalfCloseThenReset(t *testing.T) {
	for _, tc := range []struct {
		name        string
		grace       time.Duration
		reset, done bool
		wantCause   string
		wantFailed  bool
	}{
		{name: "reset within the grace", grace: time.Hour, reset: true, wantCause: "client disconnected"},
		{name: "grace runs out", grace: time.Nanosecond, wantFailed: true},
		{name: "execution ends first", grace: time.Hour, done: true, wantCause: "ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rpc, reset := context.WithCancel(context.Background())
			defer reset()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			ss := &session{stream: streamCtx{ctx: rpc}, pending: map[string]chan *ptcv1.ToolResult{}, approvals: map[string]chan *ptcv1.Approval{},
				halfCloseGrace: tc.grace}
			ch := make(chan *ptcv1.ToolResult, 1)
			ss.pending["c1"] = ch
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				ss.halfClose(ctx, cancel)
			}()
			if tc.reset {
				reset()
			}
			if tc.done {
				cancel(errors.New("ended"))
			}
			<-ended
			if got := context.Cause(ctx); tc.wantCause == "" && got != nil || tc.wantCause != "" && (got == nil || got.Error() != tc.wantCause) {
				t.Fatalf("cause %v, want %q", got, tc.wantCause)
			}
			select {
			case r := <-ch:
				if !tc.wantFailed || r.GetError().GetCode() != "cancelled" {
					t.Fatalf("pending call answered %v", r)
				}
			default:
				if tc.wantFailed {
					t.Fatal("the pending call was not failed")
				}
			}
			if !ss.closed {
				t.Fatal("the session takes new calls after a half-close")
			}
		})
	}
}
