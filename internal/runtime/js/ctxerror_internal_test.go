package js

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
)

// endingCtx is a context whose deadline has passed and that ends on the
// second read of its error: the moment between two reads at which the
// timer of a real deadline can fire.
type endingCtx struct {
	context.Context
	dl    time.Time
	reads atomic.Int32
	err   error
}

func (c *endingCtx) Deadline() (time.Time, bool) { return c.dl, true }
func (c *endingCtx) Err() error {
	if c.reads.Add(1) == 1 {
		return nil
	}
	return c.err
}

// TestCtxErrorAsTheContextEnds: a context that ends between the reads
// ctxError could make is a timeout only when the execution's own deadline
// passed; a caller's deadline, earlier than the execution's own, or a
// caller's cancellation is a cancellation.
func TestCtxErrorAsTheContextEnds(t *testing.T) {
	cases := []struct {
		name string
		// own is when the execution's own deadline is, from now (0: it
		// has no time limit); ctxDeadline the context's.
		own, ctxDeadline time.Duration
		err              error
		want             fault.Kind
	}{
		{"its own deadline passed", -time.Millisecond, -time.Millisecond, context.DeadlineExceeded, fault.KindTimeout},
		{"cancelled before its deadline", time.Hour, time.Hour, context.Canceled, fault.KindCancelled},
		{"the caller's deadline passed", time.Hour, -time.Millisecond, context.DeadlineExceeded, fault.KindCancelled},
		{"the caller's deadline passed, no limit of its own", 0, -time.Millisecond, context.DeadlineExceeded, fault.KindCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newExec(New())
			x.job = &runtime.Job{Limits: limits.Limits{Timeout: time.Second}}
			x.began = time.Now()
			if c.own != 0 {
				x.deadline = x.began.Add(c.own)
			}
			x.ctx = &endingCtx{Context: context.Background(), dl: x.began.Add(c.ctxDeadline), err: c.err}
			if fe := x.ctxError(); fe.Kind != c.want {
				t.Fatalf("got %v, want %v", fe, c.want)
			}
		})
	}
}

// windowCtx is a caller's context whose deadline has passed but that has
// not ended yet (a context of the caller's own type, whose end reaches
// the execution's context through a goroutine).
type windowCtx struct {
	context.Context
	dl time.Time
}

func (c windowCtx) Deadline() (time.Time, bool) { return c.dl, true }

// TestScriptErrorPastTheCallersDeadline: a script that fails after its
// caller's deadline passed, with no time limit of its own (a resumable
// execution that can be parked runs so, under its caller's budget), ends
// CANCELLED, not a TIMEOUT of a 0 s limit.
func TestScriptErrorPastTheCallersDeadline(t *testing.T) {
	lim := limits.DefaultPolicy().Resolve(limits.Limits{}, limits.Limits{})
	lim.Timeout = 0
	src := `throw new Error("boom")`
	out := New().RunSource(windowCtx{Context: context.Background(), dl: time.Now().Add(-time.Millisecond)}, testJob(src, lim), Source{Code: src})
	if out.Err == nil || out.Err.Kind != fault.KindCancelled {
		t.Fatalf("got %v, want CANCELLED", out.Err)
	}
}
