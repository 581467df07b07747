package executor

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
)

// legacyStore records uses as a release without leases did: no fencing
// token, so retries decide by the use's RunningUntil alone.
type legacyStore struct{ durable.Store }

func (l legacyStore) Used(ctx context.Context, id string) (durable.Record, error) {
	rec, err := l.Store.Used(ctx, id)
	rec.Fence, rec.Held = 0, false
	return rec, err
}

// TestResumeRunningElsewhere: a continuation another replica is resuming
// (its use recorded in the shared store, no outcome yet) is UNAVAILABLE
// with RESUME_IN_PROGRESS while that replica holds its lease; once the
// lease lapses a retry takes the resume over and runs it, unless it was
// taken over as often as allowed (then CONTINUATION_USED); a use recorded
// without a lease is lost once its time is up.
func TestResumeRunningElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name         string
		maxTakeovers int
		legacy       bool
		runningUntil time.Time
		lapse        bool
		code         fault.Code
		reason, msg  string
		runs         int64
	}{
		{name: "running", runningUntil: time.Now().Add(time.Hour), code: fault.CodeUnavailable, reason: fault.ReasonResumeInProgress, msg: "retry shortly"},
		{name: "lease lapsed: taken over", lapse: true, runningUntil: time.Now().Add(time.Hour), runs: 1},
		{name: "lease lapsed, no takeovers allowed", maxTakeovers: -1, lapse: true, runningUntil: time.Now().Add(time.Hour),
			code: fault.CodeFailedPrecondition, reason: fault.ReasonContinuationUsed, msg: "not taken over again"},
		{name: "no lease recorded, running", legacy: true, runningUntil: time.Now().Add(time.Hour), code: fault.CodeUnavailable, reason: fault.ReasonResumeInProgress, msg: "retry shortly"},
		{name: "no lease recorded, replica gone", legacy: true, runningUntil: time.Now().Add(-time.Second),
			code: fault.CodeFailedPrecondition, reason: fault.ReasonContinuationUsed, msg: "stopped before keeping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clock skewedClock
			var store durable.Store = durable.NewMemoryStore(0)
			if tc.legacy {
				store = legacyStore{store}
			}
			var runs atomic.Int64
			cfg := durable.Config{Now: clock.now, MaxTakeovers: tc.maxTakeovers}
			if tc.lapse {
				// The store's clock must be the one that skips ahead.
				store = nil
			} else {
				cfg.Store = store
			}
			entered, release := make(chan struct{}, 1), make(chan struct{})
			close(release)
			e, m := retryExecutor(t, cfg, -1, holdTool(&runs, entered, release))
			res, answers := pauseAt(t, e, "x")
			// The other replica's use of it.
			o, ferr := m.Open(context.Background(), res.Continuation, "")
			if ferr != nil {
				t.Fatal(ferr)
			}
			if u, ferr := m.Consume(context.Background(), o, answersDigest(answers), tc.runningUntil); u != nil || ferr != nil {
				t.Fatalf("consume: %v", ferr)
			}
			if tc.lapse {
				clock.skip(durable.DefaultLease + time.Second)
			}
			out, ferr := e.Continue(context.Background(), prepare(t, e, res.Continuation, answers))
			if tc.code == fault.CodeOK {
				if ferr != nil || out.Error != nil || string(out.Result) != `{"who":"ana","h":"held","pad":"x"}` {
					t.Fatalf("taken over: %v %s %v", ferr, out.Result, out.Error)
				}
			} else if ferr == nil || ferr.Code != tc.code || ferr.Reason != tc.reason || !strings.Contains(ferr.Message, tc.msg) {
				t.Fatalf("got %v", ferr)
			}
			if runs.Load() != tc.runs {
				t.Fatalf("the tool ran %d times, want %d", runs.Load(), tc.runs)
			}
		})
	}
}

// skewedClock is a clock that skip moves on.
type skewedClock struct{ skew atomic.Int64 }

func (c *skewedClock) now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

func (c *skewedClock) skip(d time.Duration) { c.skew.Add(int64(d)) }

// TestResumeLeaseLost: a replica whose resume is taken over (its lease
// lapsed, another replica took it) finds out at its next renewal, stops
// the execution, keeps nothing and answers RESUME_IN_PROGRESS; the
// store's record names the new holder, whose outcome alone is kept.
func TestResumeLeaseLost(t *testing.T) {
	var clock skewedClock
	var runs atomic.Int64
	entered, release := make(chan struct{}, 4), make(chan struct{})
	defer close(release)
	e, m := retryExecutor(t, durable.Config{Now: clock.now, Lease: time.Minute, LeaseRenew: 20 * time.Millisecond},
		-1, holdTool(&runs, entered, release))
	res, answers := pauseAt(t, e, "x")
	type reply struct {
		ferr *fault.Error
	}
	done := make(chan reply, 1)
	go func() {
		_, ferr := e.Continue(context.Background(), prepare(t, e, res.Continuation, answers))
		done <- reply{ferr}
	}()
	<-entered // the resume runs the held tool, holding the lease
	o, ferr := m.Open(context.Background(), res.Continuation, "")
	if ferr != nil {
		t.Fatal(ferr)
	}
	use, ferr := m.Used(context.Background(), o)
	if ferr != nil || use == nil || use.Fence != 1 || !use.Held {
		t.Fatalf("the running resume's use: %+v %v", use, ferr)
	}
	// Another replica takes it over once the lease lapsed.
	clock.skip(2 * time.Minute)
	use, _ = m.Used(context.Background(), o)
	fence, ok, ferr := m.TakeOver(context.Background(), o, use)
	if !ok || ferr != nil || fence != 2 {
		t.Fatalf("take over: %d %v %v", fence, ok, ferr)
	}
	r := <-done
	if r.ferr == nil || r.ferr.Code != fault.CodeUnavailable || r.ferr.Reason != fault.ReasonResumeInProgress || !strings.Contains(r.ferr.Message, "lost its lease") {
		t.Fatalf("the fenced replica answered %v", r.ferr)
	}
	if use, _ := m.Used(context.Background(), o); use == nil || use.Finished || use.Fence != 2 {
		t.Fatalf("the fenced replica wrote its outcome: %+v", use)
	}
	if _, kept, _ := m.Outcome(context.Background(), o); kept {
		t.Fatal("the fenced replica's outcome is kept")
	}
}

// vanishingStore shows a use whose lease lapsed to the first look, then
// refuses the takeover and has no use any more: it expired in between.
type vanishingStore struct {
	durable.Store
	looks atomic.Int64
}

func (v *vanishingStore) Used(ctx context.Context, id string) (durable.Record, error) {
	rec, err := v.Store.Used(ctx, id)
	if err != nil || v.looks.Add(1) > 1 {
		return durable.Record{}, durable.ErrNotFound
	}
	rec.Held = false
	return rec, nil
}

func (*vanishingStore) TakeOver(context.Context, string, uint64, time.Duration) (uint64, error) {
	return 0, durable.ErrFenced
}

// TestResumeTakeoverVanished: a takeover that finds the use gone (it
// expired with its continuation between the look and the takeover) is
// refused as expired, and runs nothing.
func TestResumeTakeoverVanished(t *testing.T) {
	var runs atomic.Int64
	entered, release := make(chan struct{}, 1), make(chan struct{})
	close(release)
	store := &vanishingStore{Store: durable.NewMemoryStore(0)}
	e, m := retryExecutor(t, durable.Config{Store: store}, -1, holdTool(&runs, entered, release))
	res, answers := pauseAt(t, e, "x")
	o, ferr := m.Open(context.Background(), res.Continuation, "")
	if ferr != nil {
		t.Fatal(ferr)
	}
	if u, ferr := m.Consume(context.Background(), o, answersDigest(answers), time.Now().Add(time.Hour)); u != nil || ferr != nil {
		t.Fatalf("consume: %v", ferr)
	}
	_, ferr = e.Continue(context.Background(), prepare(t, e, res.Continuation, answers))
	if ferr == nil || ferr.Code != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonContinuationExpired {
		t.Fatalf("got %v", ferr)
	}
	if runs.Load() != 0 {
		t.Fatalf("the tool ran %d times", runs.Load())
	}
}
