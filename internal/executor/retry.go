package executor

import (
	"context"
	"errors"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
)

// A resume runs detached from the call that started it: the caller's
// deadline or cancellation ends only its wait. The execution goes on
// under its own limits (its remaining time budget), stopped only by the
// server's shutdown (StartResume's stop, or Close); its outcome — the
// next pause with its new continuation, or the end — is kept by the
// durable Manager under the used continuation, with the digest of the
// answers, for the retention period. A Resume of a continuation used
// already is then answered without running anything:
//
//   - other answers: CONTINUATION_USED;
//   - the same answers, the resume still running here: it waits for it;
//   - the same answers, the outcome kept: the kept outcome;
//   - the same answers, still running on another replica: UNAVAILABLE
//     with RESUME_IN_PROGRESS (retry shortly);
//   - the same answers, the outcome no longer kept: CONTINUATION_USED.
//
// The replica running a resume holds a lease on it in the store (fencing
// token 1 for the one that used the continuation) and renews it while the
// segment runs (keepLease). When the lease lapses — the replica died, or
// lost the store — a retry with the same answers on any replica takes
// the resume over (durable.Manager.TakeOver, fencing token +1) and runs
// it again from the continuation; at most durable's MaxTakeovers times.
// A replica that cannot renew its lease for a whole lease, or finds it
// taken over, stops its segment, and the store refuses its outcome
// (Keep is fenced): only the latest holder's outcome is ever kept.

// runMargin is added to a resume's remaining time budget to tell when it
// must have ended (durable.Use.RunningUntil): past it, the replica that
// ran it is presumed gone.
const runMargin = time.Minute

// keepTimeout bounds the write of an outcome to the store.
const keepTimeout = 10 * time.Second

// errClosing stops resumes when the executor closes.
var errClosing = errors.New("the server is shutting down")

// errLeaseLost stops a resume whose replica lost its lease.
var errLeaseLost = errors.New("this replica lost the lease on the resume")

// resumeRun is a resume running on this executor. done is closed when it
// ended (res and ferr set); kept once its outcome was handed to the store
// afterwards (off the resume's own latency) and the run left e.resumes.
type resumeRun struct {
	done, kept chan struct{}
	// acquired is closed once the run holds the resume's lease (it used
	// the continuation, or took the resume over): before, another call
	// may still win the continuation with other answers.
	acquired chan struct{}
	answers  [32]byte
	res      *core.Result
	ferr     *fault.Error
}

// Resuming is a resume under way, or the outcome of one kept from before.
type Resuming struct {
	run *resumeRun
	// started: this call started the execution; retry: it is answered
	// from another call's resume (running, or its kept outcome).
	started, retry bool
}

// ready is closed when the outcome can be returned: for the call that
// started the resume, when it ended; for a retry, once the outcome is
// kept too (so that whoever got a retry's answer finds the outcome on
// every replica sharing the store).
func (r *Resuming) ready() <-chan struct{} {
	if r.retry {
		return r.run.kept
	}
	return r.run.done
}

// Wait waits for the resume's outcome. When ctx ends first, the execution
// goes on: the error (CANCELLED or DEADLINE_EXCEEDED) says to resume again
// with the same continuation and answers.
func (r *Resuming) Wait(ctx context.Context) (*core.Result, *fault.Error) {
	select {
	case <-r.ready():
		return r.run.res, r.run.ferr
	case <-ctx.Done():
	}
	select {
	case <-r.ready():
		return r.run.res, r.run.ferr
	default:
	}
	code := fault.CodeCanceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		code = fault.CodeDeadlineExceeded
	}
	return nil, fault.Reject(code, "the wait for the resumed execution ended (%v); the execution goes on: resume again with the same continuation and answers to get its outcome", ctx.Err())
}

// Done is closed when Wait returns at once.
func (r *Resuming) Done() <-chan struct{} { return r.ready() }

// Started reports whether this call started the execution: its end is
// this call's to account for (metrics, admission), once, whether or not
// anyone waits for it.
func (r *Resuming) Started() bool { return r.started }

// Retry reports whether the outcome is another call's: a retry of a
// resume already running or ended, which ran nothing.
func (r *Resuming) Retry() bool { return r.retry }

// Retry reports whether p resumes a continuation used already (see
// StartResume): it needs no admission, nothing runs.
func (p *Prepared) Retry() bool { return p.resume != nil && p.resume.used != nil }

// Continue starts a prepared resume (StartResume) and waits for its
// outcome while ctx lasts.
func (e *Executor) Continue(ctx context.Context, p *Prepared) (*core.Result, *fault.Error) {
	r, ferr := e.StartResume(ctx, p, Detach{})
	if ferr != nil {
		return nil, ferr
	}
	return r.Wait(ctx)
}

// Detach configures how StartResume runs a resume apart from its call.
type Detach struct {
	// Stop (nil: none), when it ends, stops the execution: a server's
	// shutdown. Close stops it too.
	Stop context.Context
	// Ended, when set, is called once when an execution this call
	// started ends, after its outcome is kept and before any waiter gets
	// it: the place to account for it (metrics, admission).
	Ended func(res *core.Result, ferr *fault.Error)
}

// StartResume uses up a prepared resume's continuation — or, for a
// retry prepared to take over a resume whose lease lapsed, takes it over
// — and goes on with the execution on its own goroutine, under the lease,
// detached from ctx's cancellation (ctx's values stay), until it pauses
// again or ends. For a continuation used already it runs nothing: it
// answers the retry (see above), and d.Ended is not called. A run that
// loses its lease ends with RESUME_IN_PROGRESS and keeps nothing.
func (e *Executor) StartResume(ctx context.Context, p *Prepared, d Detach) (*Resuming, *fault.Error) {
	stop := d.Stop
	rs := p.resume
	if rs == nil {
		return nil, &fault.Error{Code: fault.CodeInternal, Message: "not a resume"}
	}
	if rs.used != nil {
		return e.retry(ctx, rs, rs.used)
	}
	id := rs.opened.PauseID
	run := &resumeRun{done: make(chan struct{}), kept: make(chan struct{}), acquired: make(chan struct{}), answers: rs.digest}
	e.resumeMu.Lock()
	if e.closed {
		e.resumeMu.Unlock()
		return nil, fault.Reject(fault.CodeUnavailable, "the server is shutting down: resume on another replica, or after its restart")
	}
	if other := e.resumes[id]; other != nil {
		e.resumeMu.Unlock()
		return e.join(other, rs.digest)
	}
	e.resumes[id] = run
	e.resumeWG.Add(1)
	e.resumeMu.Unlock()
	fence, used, ferr := e.acquire(ctx, p)
	if ferr != nil || used != nil {
		// The continuation was used elsewhere, or taken over there first
		// (or the store failed): the run registered above never starts.
		// Callers that joined it meanwhile get this call's answer.
		e.forget(id, run)
		var r *Resuming
		if ferr == nil {
			r, ferr = e.retry(ctx, rs, used)
		}
		abandon(run, r, ferr)
		e.resumeWG.Done()
		return r, ferr
	}
	close(run.acquired)
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unlinks := []func() bool{context.AfterFunc(e.closing, func() { cancel(errClosing) })}
	if stop != nil {
		unlinks = append(unlinks, context.AfterFunc(stop, func() { cancel(context.Cause(stop)) }))
	}
	// The lease keeper renews the lease while the execution runs; it ends
	// when leased is closed (below, once the execution ended), or when
	// the lease is lost, after stopping the execution.
	leased := make(chan struct{})
	keeperDone := make(chan struct{})
	go func() {
		defer close(keeperDone)
		e.keepLease(context.WithoutCancel(ctx), rs.opened, fence, leased, func() { cancel(errLeaseLost) })
	}()
	// This goroutine owns the resumed execution: it ends when the
	// execution pauses again or ends (bounded by its limits, or stopped by
	// stop, Close or the loss of its lease), hands the outcome to the
	// store, and only then answers (closes run.done and run.kept): a
	// replica that dies after answering has kept the outcome for every
	// retry.
	go func() {
		defer e.resumeWG.Done()
		res, ferr := e.continueRun(runCtx, p)
		close(leased)
		<-keeperDone
		lost := errors.Is(context.Cause(runCtx), errLeaseLost)
		for _, u := range unlinks {
			u()
		}
		cancel(nil)
		if !lost {
			var out []byte
			if ferr == nil && e.outcomes != nil {
				out, _ = e.outcomes.MarshalOutcome(res)
			}
			kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
			// A failure to keep it leaves the use "running": its lease
			// lapses, and a retry elsewhere takes the resume over.
			err := e.durable.Keep(kctx, rs.opened, fence, rs.digest, out)
			kcancel()
			lost = errors.Is(err, durable.ErrFenced)
		}
		if lost {
			// Another replica holds the resume now (or will once the lease
			// lapses): its outcome is the one kept, and callers get it by
			// retrying.
			res, ferr = nil, leaseLost()
		}
		if d.Ended != nil {
			d.Ended(res, ferr)
		}
		run.res, run.ferr = res, ferr
		close(run.done)
		e.forget(id, run)
		close(run.kept)
	}()
	return &Resuming{run: run, started: true}, nil
}

// acquire takes the lease on a prepared resume: by using its
// continuation up (fencing token 1), or, for a retry of a resume whose
// lease lapsed, by taking it over. A non-nil use means it is not this
// call's to run: the continuation was used (or taken over) by another
// call first.
func (e *Executor) acquire(ctx context.Context, p *Prepared) (uint64, *durable.Use, *fault.Error) {
	rs := p.resume
	if rs.takeover == nil {
		used, ferr := e.durable.Consume(ctx, rs.opened, rs.digest, runningUntil(p))
		return 1, used, ferr
	}
	fence, ok, ferr := e.durable.TakeOver(ctx, rs.opened, rs.takeover)
	if ferr != nil || ok {
		return fence, nil, ferr
	}
	used, ferr := e.durable.Used(ctx, rs.opened)
	if ferr == nil && used == nil {
		// The use expired with its continuation in between.
		ferr = fault.Reject(fault.CodeFailedPrecondition, "continuation expired while it was being resumed").Because(fault.ReasonContinuationExpired)
	}
	return 0, used, ferr
}

// keepLease renews the lease of the holder of fence on the resume of o
// every renewal interval until stop is closed. When a renewal is refused
// (the resume was taken over or ended elsewhere), or none succeeded for a
// whole lease (the store is unreachable: another replica may take over),
// it calls lost once and returns.
func (e *Executor) keepLease(ctx context.Context, o *durable.Opened, fence uint64, stop <-chan struct{}, lost func()) {
	ttl, every := e.durable.Lease()
	renewed := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, every)
		err := e.durable.Renew(rctx, o, fence)
		cancel()
		switch {
		case err == nil:
			renewed = sent
		case errors.Is(err, durable.ErrFenced) || time.Since(renewed) >= ttl:
			lost()
			return
		}
	}
}

// mayTakeOver reports whether a resume with answers digest of a
// continuation recorded as used may take the resume over: the same
// answers, a lease that lapsed, and takeovers left.
func (e *Executor) mayTakeOver(used *durable.Use, digest [32]byte) bool {
	return used.Answers == digest && used.Lapsed() && used.Takeovers() < e.durable.MaxTakeovers()
}

// runningUntil is when a resume of p starting now must have ended: its
// remaining time budget and a margin; the continuation's expiry when it
// has no time limit.
func runningUntil(p *Prepared) time.Time {
	if t := p.limits.Timeout; t > 0 {
		return time.Now().Add(max(t-p.resume.usage.Wall, 0) + runMargin)
	}
	return p.resume.opened.Expires
}

// abandon answers the callers that joined run, a resume that never
// started here because its continuation was used elsewhere, with what the
// call that registered it got (r, ferr): the kept outcome, or an error
// such as RESUME_IN_PROGRESS. A resume still running here (r joined
// another run) is in progress for them.
func abandon(run *resumeRun, r *Resuming, ferr *fault.Error) {
	switch {
	case ferr != nil:
		run.ferr = ferr
	case r != nil && isClosed(r.run.kept):
		run.res, run.ferr = r.run.res, r.run.ferr
	default:
		run.ferr = resumeInProgress()
	}
	close(run.done)
	close(run.kept)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (e *Executor) forget(id string, run *resumeRun) {
	e.resumeMu.Lock()
	if e.resumes[id] == run {
		delete(e.resumes, id)
	}
	e.resumeMu.Unlock()
}

// join answers a retry of a resume running here. A resume with other
// answers that is still racing for the continuation (another replica, or
// another call, may win it) is in progress: only once it holds the lease
// are the answers it was used with known.
func (e *Executor) join(run *resumeRun, digest [32]byte) (*Resuming, *fault.Error) {
	if run.answers != digest {
		if !isClosed(run.acquired) {
			return nil, resumeInProgress()
		}
		return nil, usedOtherAnswers()
	}
	return &Resuming{run: run, retry: true}, nil
}

// retry answers a resume of a continuation used already, with use.
func (e *Executor) retry(ctx context.Context, rs *resumed, use *durable.Use) (*Resuming, *fault.Error) {
	if use.Answers != rs.digest {
		return nil, usedOtherAnswers()
	}
	e.resumeMu.Lock()
	run := e.resumes[rs.opened.PauseID]
	e.resumeMu.Unlock()
	if run != nil {
		return e.join(run, rs.digest)
	}
	// The use is read again before the outcome, never after: a resume
	// that finished elsewhere since use was read has kept its outcome by
	// the time its use reads finished, so the outcome read next is there.
	if !use.Finished {
		if now, ferr := e.durable.Used(ctx, rs.opened); ferr == nil && now != nil {
			use = now
		}
	}
	b, kept, ferr := e.durable.Outcome(ctx, rs.opened)
	if ferr != nil {
		return nil, ferr
	}
	if kept && e.outcomes != nil {
		res, err := e.outcomes.UnmarshalOutcome(b)
		if err != nil {
			return nil, &fault.Error{Code: fault.CodeInternal, Message: "the kept outcome of this resume does not decode: " + err.Error()}
		}
		done := &resumeRun{done: make(chan struct{}), kept: make(chan struct{}), acquired: make(chan struct{}), answers: rs.digest, res: res}
		close(done.done)
		close(done.kept)
		return &Resuming{run: done, retry: true}, nil
	}
	switch {
	case use.Finished:
		return nil, fault.Reject(fault.CodeFailedPrecondition,
			"continuation was used already, and the outcome of that resume is no longer kept (outcomes are kept for %s): resume with the continuation that resume returned", e.durable.Retention()).Because(fault.ReasonContinuationUsed)
	case use.Lapsed() && use.Takeovers() >= e.durable.MaxTakeovers():
		return nil, fault.Reject(fault.CodeFailedPrecondition,
			"continuation was used already, and the replicas that ran its resume stopped before keeping the outcome %d times; it is not taken over again: the execution cannot be resumed again", use.Takeovers()+1).Because(fault.ReasonContinuationUsed)
	case use.Fence == 0 && time.Now().After(use.RunningUntil):
		return nil, fault.Reject(fault.CodeFailedPrecondition,
			"continuation was used already, and the replica that resumed it stopped before keeping the outcome: the execution cannot be resumed again").Because(fault.ReasonContinuationUsed)
	}
	return nil, resumeInProgress()
}

func resumeInProgress() *fault.Error {
	return fault.Reject(fault.CodeUnavailable,
		"continuation is being resumed on another replica with the same answers: retry shortly with the same continuation and answers to get the outcome").Because(fault.ReasonResumeInProgress)
}

// leaseLost answers the callers of a resume whose replica lost its lease:
// another replica holds it, or will once it lapses, and keeps the outcome.
func leaseLost() *fault.Error {
	return fault.Reject(fault.CodeUnavailable,
		"this replica lost its lease on the resume (it was taken over, or the state store could not be reached): retry shortly with the same continuation and answers to get the outcome").Because(fault.ReasonResumeInProgress)
}

func usedOtherAnswers() *fault.Error {
	return fault.Reject(fault.CodeFailedPrecondition,
		"continuation was used already, resumed with other answers: each continuation resumes its execution once (resume with the continuation the last resume returned)").Because(fault.ReasonContinuationUsed)
}
