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
// ctxError makes is still a timeout when its deadline passed, and still a
// cancellation when it was cancelled.
func TestCtxErrorAsTheContextEnds(t *testing.T) {
	cases := []struct {
		name     string
		deadline time.Duration
		err      error
		want     fault.Kind
	}{
		{"deadline passed", -time.Millisecond, context.DeadlineExceeded, fault.KindTimeout},
		{"cancelled before the deadline", time.Hour, context.Canceled, fault.KindCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newExec(New())
			x.job = &runtime.Job{Limits: limits.Limits{Timeout: time.Second}}
			x.began = time.Now()
			x.ctx = &endingCtx{Context: context.Background(), dl: time.Now().Add(c.deadline), err: c.err}
			if fe := x.ctxError(); fe.Kind != c.want {
				t.Fatalf("got %v, want %v", fe, c.want)
			}
		})
	}
}
