package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// A resumable execution (Config.Resumable) may pause at calls only its
// caller can answer — calls to client tools, and calls that need approval
// when no approver is at hand — and be re-run later, anywhere, from its
// Journal. The Dispatcher makes that work with three rules:
//
//   - Every completion goes through a gate. The engine reports when it is
//     idle (Idle: nothing runnable, inflight calls not yet delivered), and
//     the gate hands over one completion per idle report. The order in
//     which the script received its results is therefore known — it is the
//     order of the journal — and a re-run can reproduce it exactly.
//   - The execution pauses when the engine is idle and every call it waits
//     for waits for the caller: no server tool is running, no completion
//     is held. Calls started together pause together; server tools keep
//     running until then.
//   - A re-run (Config.Journal) answers every journaled call from the
//     journal, in journal order, without running any tool; a call that
//     differs from the journal (another tool, other arguments, a call the
//     paused run did not make) ends the execution as diverged. Once the
//     re-run is idle where the execution paused, the answers are applied
//     (an approved call runs now, exactly once, with its idempotency key)
//     and the execution goes on live.
//
// The engine only reports idleness; it never knows about pauses. A pause
// calls Config.OnPause, which stops the engine (or leaves it parked, idle,
// until Resume).

// gate is one call of a resumable execution, from Start until the script
// receives its outcome.
type gate struct {
	seq  int32
	tool string
	args json.RawMessage
	idx  int
	t    *tools.Compiled
	// b is how the call began (its observer's context and event).
	b begun
	// start is when the call started (or was answered, for a call that
	// waited for its caller).
	start time.Time

	// journaled is the journal's entry of a re-run call.
	journaled *core.JournalEntry
	// action is set while the call waits for its caller; answer receives
	// the answer.
	action *core.Action
	answer chan core.Answer

	// Under durable.mu: done once out and err are known; release is closed
	// when the script may receive them.
	done    bool
	out     json.RawMessage
	err     *CallError
	release chan struct{}
}

// durable is the resumable state of a Dispatcher.
type durable struct {
	d      *Dispatcher
	client map[string]bool

	mu sync.Mutex
	// Re-run: the journal's entries by seq, its delivery order and the
	// next position in it, its pending calls by seq, the highest seq it
	// knows, and whether the re-run has not yet reached the pause point.
	entries   map[int32]*core.JournalEntry
	order     []int32
	pos       int
	pending   map[int32]*core.Action
	answers   map[int32]core.Answer
	maxSeq    int32
	replaying bool

	// open holds the calls not yet delivered, by seq; held the completed
	// ones waiting for an idle report (live), in completion order;
	// parked counts the calls waiting for their caller, running the others.
	open    map[int32]*gate
	held    []*gate
	parked  int
	running int
	// idle is the engine's last idle report (-1 while it runs); cpu its
	// CPU time then.
	idle int
	cpu  time.Duration

	// journal is what this execution delivered, in order.
	journal []core.JournalEntry
	// paused is set while the execution is paused; ended once it paused
	// for good or diverged.
	paused   bool
	diverged *fault.Error
}

func newDurable(d *Dispatcher) *durable {
	c := d.cfg
	u := &durable{d: d, client: map[string]bool{}, entries: map[int32]*core.JournalEntry{},
		pending: map[int32]*core.Action{}, answers: c.Answers, open: map[int32]*gate{}, idle: -1}
	for _, n := range c.ClientTools {
		u.client[n] = true
	}
	for i := range c.Journal.Calls {
		e := &c.Journal.Calls[i]
		u.entries[e.Seq] = e
		u.order = append(u.order, e.Seq)
		u.maxSeq = max(u.maxSeq, e.Seq)
	}
	for i := range c.Journal.Pending {
		a := &c.Journal.Pending[i]
		u.pending[a.Seq] = a
		u.maxSeq = max(u.maxSeq, a.Seq)
	}
	u.replaying = len(u.order) > 0 || len(u.pending) > 0
	u.journal = make([]core.JournalEntry, 0, len(u.order)+len(u.pending)+8)
	return u
}

// start is Start of a resumable execution.
func (u *durable) start(ctx context.Context, name string, args json.RawMessage) Invocation {
	d := u.d
	u.mu.Lock()
	defer u.mu.Unlock()
	u.idle = -1
	if u.paused || u.diverged != nil {
		return failed(&CallError{Name: NameToolError, Tool: name, Code: tools.CodeCancelled, Message: "the call was cancelled"})
	}
	b := d.begin(ctx, name, args, false)
	g := &gate{seq: b.seq, tool: name, args: args, idx: b.idx, start: b.start, release: make(chan struct{})}
	sum, kept := entryArgs(args)
	if u.replaying || b.seq <= u.maxSeq {
		if e := u.entries[b.seq]; e != nil {
			if e.Tool != name || e.ArgsSHA256 != sum {
				u.diverge(divergence(b.seq, name, "the script called tools.%s(%s) where the paused run called tools.%s(%s)",
					name, describeArgs(kept, sum), e.Tool, describeArgs(e.Args, e.ArgsSHA256)))
				return failed(&CallError{Name: NameToolError, Tool: name, Code: tools.CodeCancelled, Message: "the call was cancelled"})
			}
			g.journaled = e
			g.done, g.out, g.err = true, e.Result, callErrorFrom(name, e.Failure)
			d.record(b.idx, e)
			u.open[g.seq] = g
			return u.invocation(ctx, g)
		}
		if a := u.pending[b.seq]; a != nil {
			sumA, _ := entryArgs(a.Arguments)
			if a.Tool != name || sumA != sum {
				u.diverge(divergence(b.seq, name, "the script called tools.%s(%s) where the paused run waited for tools.%s(%s)",
					name, describeArgs(kept, sum), a.Tool, describeArgs(a.Arguments, sumA)))
				return failed(&CallError{Name: NameToolError, Tool: name, Code: tools.CodeCancelled, Message: "the call was cancelled"})
			}
			g.t = d.tools[name]
			d.observe(&b, name, args)
			g.b = b
			u.parkLocked(g, *a)
			return u.invocation(ctx, g)
		}
		u.diverge(divergence(b.seq, name, "the script called tools.%s(%s), a call the paused run had not made before it paused",
			name, describeArgs(kept, sum)))
		return failed(&CallError{Name: NameToolError, Tool: name, Code: tools.CodeCancelled, Message: "the call was cancelled"})
	}

	// A live call. One refused at once is complete already.
	d.observe(&b, name, args)
	g.b = b
	u.open[g.seq] = g
	if b.err != nil {
		d.finish(b.ctx, b.ev, b.idx, b.start, nil, b.err)
		g.done, g.err = true, b.err
		u.held = append(u.held, g)
		return u.invocation(ctx, g)
	}
	t, args, cerr := d.check(name, args)
	if cerr != nil {
		d.finish(b.ctx, b.ev, b.idx, b.start, nil, cerr)
		g.done, g.err = true, cerr
		u.held = append(u.held, g)
		return u.invocation(ctx, g)
	}
	g.t, g.args = t, args
	if u.client[name] {
		u.parkLocked(g, d.traced(b.ctx, d.action(core.ActionClientTool, name, g.seq, args, "")))
	} else if reason, ok := d.cfg.Approvals[name]; ok && d.cfg.Approve == nil {
		u.parkLocked(g, d.traced(b.ctx, d.action(core.ActionApproval, name, g.seq, args, reason)))
	} else {
		u.running++
	}
	return u.invocation(ctx, g)
}

// parkLocked makes g wait for its caller.
func (u *durable) parkLocked(g *gate, a core.Action) {
	g.action = &a
	g.answer = make(chan core.Answer, 1)
	u.open[g.seq] = g
	u.parked++
}

// invocation is the Invocation of a gated call: it produces the outcome
// (answered or run live) unless it was complete at Start (journaled, or
// refused), then waits at the gate.
// It is made under u.mu.
func (u *durable) invocation(ctx context.Context, g *gate) Invocation {
	done := g.done
	return func() (json.RawMessage, error) {
		d := u.d
		if !done {
			var out json.RawMessage
			var err error
			if g.action != nil {
				select {
				case ans := <-g.answer:
					out, err = u.apply(ctx, g, ans)
				case <-ctx.Done():
					if errors.Is(context.Cause(ctx), core.ErrPaused) {
						d.pausedCall(g.b)
					}
					return nil, ctxError(g.tool, ctx)
				}
			} else {
				out, err = d.invoke(g.b.ctx, g.t, g.seq, g.b.key, g.args, false)
				d.finish(g.b.ctx, g.b.ev, g.idx, g.start, out, err)
			}
			u.complete(g, out, err)
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctxError(g.tool, ctx)
		}
		if g.err != nil {
			return nil, g.err
		}
		return g.out, nil
	}
}

// apply gives a waiting call its answer: an approved call runs now.
func (u *durable) apply(ctx context.Context, g *gate, ans core.Answer) (json.RawMessage, error) {
	d := u.d
	start := time.Now()
	out, cerr, approve := answerOutcome(g.action, ans)
	var err error
	switch {
	case approve && g.t == nil:
		err = &CallError{Name: NameToolError, Tool: g.tool, Code: tools.CodeUnknownTool,
			Message: "the approved tool is no longer available on this server"}
	case approve:
		out, err = d.run(g.b.ctx, g.t, g.seq, g.b.key, g.args, false)
	case cerr != nil:
		err = cerr
	}
	d.finish(g.b.ctx, g.b.ev, g.idx, start, out, err)
	return out, err
}

// pausedCall tells the observer that a call waiting for its caller stays
// unanswered in this run: the execution paused and its engine stopped.
func (d *Dispatcher) pausedCall(b begun) {
	if p, ok := d.cfg.Observer.(core.PauseObserver); ok && b.ev != nil {
		p.CallPaused(b.ctx, b.ev)
	}
}

// complete records the outcome of a call that was answered or ran live
// and queues it at the gate.
func (u *durable) complete(g *gate, out json.RawMessage, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.running--
	g.done, g.out = true, out
	if err != nil {
		g.err = callErrorOf(g.tool, err)
	}
	u.held = append(u.held, g)
	u.stepLocked()
}

// Idle is the engine's report that it waits with nothing to run:
// inflight calls are started and not yet delivered to the script, and it
// has used cpu so far. Engines call it only in resumable executions.
func (d *Dispatcher) Idle(inflight int, cpu time.Duration) {
	u := d.dur
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.paused || u.diverged != nil {
		return
	}
	u.idle, u.cpu = inflight, cpu
	u.stepLocked()
}

// stepLocked releases the next completion when the engine is idle, ends a
// re-run at the pause point, or pauses.
func (u *durable) stepLocked() {
	if u.idle < 0 || u.paused || u.diverged != nil {
		return
	}
	if u.replaying {
		if u.pos < len(u.order) {
			seq := u.order[u.pos]
			g := u.open[seq]
			if g == nil {
				e := u.entries[seq]
				u.diverge(divergence(seq, e.Tool, "the script waits where the paused run went on to receive the result of tools.%s (call #%d), a call it has not made", e.Tool, seq))
				return
			}
			if g.done {
				u.pos++
				u.releaseLocked(g)
			}
			return
		}
		for seq, a := range u.pending {
			if u.open[seq] == nil {
				u.diverge(divergence(seq, a.Tool, "the script waits without having made the call tools.%s (call #%d) that the paused run waited for", a.Tool, seq))
				return
			}
		}
		// The re-run is where the execution paused: the answers apply and
		// the execution goes on live.
		u.replaying = false
		answers := u.answers
		u.answers = nil
		if f := u.d.cfg.OnReplayed; f != nil {
			f()
		}
		u.answerLocked(answers)
		return
	}
	if len(u.held) > 0 {
		g := u.held[0]
		u.held = u.held[1:]
		u.releaseLocked(g)
		return
	}
	if u.idle > 0 && u.running == 0 && u.parked == u.idle {
		u.paused = true
		if f := u.d.cfg.OnPause; f != nil {
			f()
		}
	}
}

// releaseLocked lets the script receive g's outcome and journals it.
func (u *durable) releaseLocked(g *gate) {
	u.idle = -1
	delete(u.open, g.seq)
	close(g.release)
	if g.journaled != nil {
		u.journal = append(u.journal, *g.journaled)
		return
	}
	sum, kept := entryArgs(g.args)
	e := core.JournalEntry{Seq: g.seq, Tool: g.tool, ArgsSHA256: sum, Args: kept, Result: g.out, Failure: failureOf(g.err)}
	e.StartedAfter, e.Duration = u.d.timing(g.idx)
	u.journal = append(u.journal, e)
}

// answerLocked hands answers to the waiting calls they answer.
func (u *durable) answerLocked(answers map[int32]core.Answer) {
	for seq, g := range u.open {
		if g.action == nil || g.done {
			continue
		}
		if ans, ok := answers[seq]; ok {
			// From now on the call runs: the execution cannot pause
			// until it is delivered.
			u.parked--
			u.running++
			g.answer <- ans
		}
	}
}

func (u *durable) diverge(fe *fault.Error) {
	if u.diverged != nil || u.paused {
		return
	}
	u.diverged = fe
	if f := u.d.cfg.OnPause; f != nil {
		f()
	}
}

// Paused reports whether the resumable execution is paused, and then its
// journal: the calls delivered so far and the calls it waits for.
func (d *Dispatcher) Paused() (core.Journal, bool) {
	u := d.dur
	if u == nil {
		return core.Journal{}, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.paused {
		return core.Journal{}, false
	}
	j := core.Journal{Calls: slices.Clone(u.journal)}
	for _, g := range u.open {
		if g.action != nil && !g.done {
			j.Pending = append(j.Pending, *g.action)
		}
	}
	slices.SortFunc(j.Pending, func(a, b core.Action) int { return int(a.Seq - b.Seq) })
	return j, true
}

// Diverged returns the failure of a re-run that diverged from its journal
// — including one whose script ended before reaching the pause point —
// or nil.
func (d *Dispatcher) Diverged() *fault.Error {
	u := d.dur
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.diverged == nil && u.replaying && !u.paused {
		return fault.New(fault.KindDiverged, "the resumed execution diverged from the paused one: the script ended before reaching the point where it paused; "+
			"a resumable script must make the same calls in the same order on every run (base them only on input and tool results)")
	}
	return u.diverged
}

// PausedCPU returns the CPU time the engine reported when it went idle
// last: at a pause, what the execution used so far.
func (d *Dispatcher) PausedCPU() time.Duration {
	if d.dur == nil {
		return 0
	}
	d.dur.mu.Lock()
	defer d.dur.mu.Unlock()
	return d.dur.cpu
}

// Resume goes on with a paused execution whose engine stayed idle: the
// answers (by seq, validated against Paused's pending calls) are applied
// and the execution runs until it pauses again or ends.
func (d *Dispatcher) Resume(answers map[int32]core.Answer) {
	u := d.dur
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.paused {
		return
	}
	u.paused = false
	u.answerLocked(answers)
}
