package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/tools"
)

// holdTool is a server tool that counts its runs, signals entered and
// returns when release is closed.
func holdTool(runs *atomic.Int64, entered chan<- struct{}, release <-chan struct{}) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: "hold"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		runs.Add(1)
		entered <- struct{}{}
		select {
		case <-release:
			return json.RawMessage(`"held"`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

// holdScript pauses at a client tool, then calls the held server tool.
const holdScript = `const who = await tools.ask({}); const h = await tools.hold({}); return {who, h, pad: input};`

var testKeys = []durable.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}

// retryExecutor returns an executor on a Manager of cfg (its keys set).
func retryExecutor(t *testing.T, cfg durable.Config, parked int, ts ...tools.Tool) (*Executor, *durable.Manager) {
	t.Helper()
	cfg.Keys = testKeys
	m, err := durable.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	for _, tl := range ts {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return newExecutor(t, Config{Registry: reg, Durable: m, Parked: ParkedConfig{Max: parked}}), m
}

// pauseAt runs holdScript (input: pad) until it pauses at ask.
func pauseAt(t *testing.T, e *Executor, pad string) (*core.Result, []core.Answer) {
	t.Helper()
	in, _ := json.Marshal(pad)
	res := run(t, e, core.Request{Script: core.Script{Source: holdScript}, Input: in, Resumable: true, ClientTools: []tools.Tool{askTool}})
	if len(res.Pending) != 1 {
		t.Fatalf("not paused: %+v %v", res.Pending, res.Error)
	}
	return res, []core.Answer{{CallID: res.Pending[0].CallID, Output: json.RawMessage(`"ana"`)}}
}

func prepare(t *testing.T, e *Executor, tok string, answers []core.Answer) *Prepared {
	t.Helper()
	p, ferr := e.PrepareResume(context.Background(), Resume{Continuation: tok, Answers: answers})
	if ferr != nil {
		t.Fatalf("prepare resume: %v", ferr)
	}
	return p
}

// TestResumeCutOffRetried: a resume whose caller stops waiting goes on; a
// retry while it runs here waits for it, a later one gets the kept
// outcome, and the held tool ran once. Parked and re-run alike.
func TestResumeCutOffRetried(t *testing.T) {
	for _, parked := range []int{-1, 0} {
		t.Run(fmt.Sprintf("parked=%d", parked), func(t *testing.T) {
			var runs atomic.Int64
			entered, release := make(chan struct{}, 1), make(chan struct{})
			e, _ := retryExecutor(t, durable.Config{}, parked, holdTool(&runs, entered, release))
			res, answers := pauseAt(t, e, "x")
			ctx, cancel := context.WithCancel(context.Background())
			first, ferr := e.StartResume(ctx, prepare(t, e, res.Continuation, answers), Detach{})
			if ferr != nil || !first.Started() || first.Retry() {
				t.Fatalf("start: %v", ferr)
			}
			<-entered
			cancel()
			if _, ferr := first.Wait(ctx); ferr == nil || ferr.Code != fault.CodeCanceled || !strings.Contains(ferr.Message, "goes on") {
				t.Fatalf("wait cut off: %v", ferr)
			}
			p := prepare(t, e, res.Continuation, answers)
			if !p.Retry() {
				t.Fatal("a used continuation is not prepared as a retry")
			}
			retry, ferr := e.StartResume(context.Background(), p, Detach{})
			if ferr != nil || retry.Started() || !retry.Retry() {
				t.Fatalf("retry: %v", ferr)
			}
			select {
			case <-retry.Done():
				t.Fatal("the retry did not wait for the running resume")
			default:
			}
			close(release)
			out, ferr := retry.Wait(context.Background())
			if ferr != nil || out.Error != nil || string(out.Result) != `{"who":"ana","h":"held","pad":"x"}` {
				t.Fatalf("retried outcome: %v %+v", ferr, out)
			}
			again, ferr := e.Continue(context.Background(), prepare(t, e, res.Continuation, answers))
			if ferr != nil || string(again.Result) != string(out.Result) || again.Stats.ToolCalls != out.Stats.ToolCalls || len(again.Trace) != len(out.Trace) {
				t.Fatalf("kept outcome: %v %+v", ferr, again)
			}
			if runs.Load() != 1 {
				t.Fatalf("the held tool ran %d times", runs.Load())
			}
			// Other answers: refused, nothing runs.
			_, ferr = e.Continue(context.Background(), prepare(t, e, res.Continuation, []core.Answer{{CallID: answers[0].CallID, Output: json.RawMessage(`"bo"`)}}))
			if ferr == nil || ferr.Code != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonContinuationUsed || !strings.Contains(ferr.Message, "other answers") {
				t.Fatalf("other answers: %v", ferr)
			}
		})
	}
}

// TestResumeOutcomeRetention: past the retention (an injected clock), a
// retry is CONTINUATION_USED, saying the outcome is no longer kept.
func TestResumeOutcomeRetention(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	var runs atomic.Int64
	entered, release := make(chan struct{}, 1), make(chan struct{})
	close(release)
	e, _ := retryExecutor(t, durable.Config{Now: clock, OutcomeRetention: time.Minute}, 0, holdTool(&runs, entered, release))
	res, answers := pauseAt(t, e, "x")
	out := resume(t, e, res, answers...)
	<-entered
	if again := resume(t, e, res, answers...); string(again.Result) != string(out.Result) {
		t.Fatalf("retry within the retention: %s", again.Result)
	}
	skew.Store(int64(time.Minute + time.Second))
	_, ferr := e.Continue(context.Background(), prepare(t, e, res.Continuation, answers))
	if ferr == nil || ferr.Code != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonContinuationUsed || !strings.Contains(ferr.Message, "no longer kept") {
		t.Fatalf("retry past the retention: %v", ferr)
	}
	if runs.Load() != 1 {
		t.Fatalf("the held tool ran %d times", runs.Load())
	}
}

// sizeStore records the size of the outcomes kept.
type sizeStore struct {
	durable.Store
	last atomic.Int64
}

func (s *sizeStore) Finish(ctx context.Context, id string, fence uint64, mark, outcome []byte, keepUntil, expires time.Time) error {
	s.last.Store(int64(len(outcome)))
	return s.Store.Finish(ctx, id, fence, mark, outcome, keepUntil, expires)
}

// TestResumeOutcomeBudget: the memory store keeps outcomes up to its byte
// budget; a newer one evicts the oldest, whose retry is then
// CONTINUATION_USED ("no longer kept"), and one larger than the budget is
// not kept at all.
func TestResumeOutcomeBudget(t *testing.T) {
	entered, release := make(chan struct{}, 8), make(chan struct{})
	close(release)
	var runs atomic.Int64
	hold := holdTool(&runs, entered, release)
	pad := strings.Repeat("budget ", 500)
	// The size of one outcome.
	measure := &sizeStore{Store: durable.NewMemoryStore(0)}
	e, _ := retryExecutor(t, durable.Config{Store: measure}, 0, hold)
	res, answers := pauseAt(t, e, pad)
	resume(t, e, res, answers...)
	resume(t, e, res, answers...) // returns once the outcome is kept
	size := measure.last.Load()
	if size == 0 {
		t.Fatal("no outcome kept")
	}
	for _, tc := range []struct {
		name   string
		budget int64
		// kept reports whether the first and the second outcome are kept.
		kept [2]bool
	}{
		{"room for one", size + size/2, [2]bool{false, true}},
		{"room for two", 3 * size, [2]bool{true, true}},
		{"smaller than one", size / 2, [2]bool{false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := retryExecutor(t, durable.Config{OutcomeBytes: tc.budget}, 0, hold)
			var paused [2]*core.Result
			var outs [2]*core.Result
			for i := range paused {
				res, answers := pauseAt(t, e, pad)
				paused[i], outs[i] = res, resume(t, e, res, answers...)
				// A retry returns once the outcome is kept (or not): the
				// outcomes reach the store in order.
				_, _ = e.Continue(context.Background(), prepare(t, e, res.Continuation, answers))
			}
			for i, res := range paused {
				again, ferr := e.Continue(context.Background(), prepare(t, e, res.Continuation, []core.Answer{{CallID: res.Pending[0].CallID, Output: json.RawMessage(`"ana"`)}}))
				switch {
				case tc.kept[i] && (ferr != nil || string(again.Result) != string(outs[i].Result)):
					t.Errorf("outcome %d not kept: %v", i, ferr)
				case !tc.kept[i] && (ferr == nil || ferr.Reason != fault.ReasonContinuationUsed || !strings.Contains(ferr.Message, "no longer kept")):
					t.Errorf("outcome %d kept past the budget: %v", i, ferr)
				}
			}
		})
	}
}

// TestResumeOutcomeFileStore: the file store keeps an outcome across a
// restart of the process that owns it.
func TestResumeOutcomeFileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "durable.db")
	entered, release := make(chan struct{}, 1), make(chan struct{})
	close(release)
	var runs atomic.Int64
	store, err := durable.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e, m := retryExecutor(t, durable.Config{Store: store}, 0, holdTool(&runs, entered, release))
	res, answers := pauseAt(t, e, "x")
	out := resume(t, e, res, answers...)
	_ = e.Close()
	_ = m.Close()
	store, err = durable.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e, m = retryExecutor(t, durable.Config{Store: store}, 0, holdTool(&runs, entered, release))
	t.Cleanup(func() { _ = m.Close() })
	again := resume(t, e, res, answers...)
	if string(again.Result) != string(out.Result) || again.ExecutionID != out.ExecutionID || runs.Load() != 1 {
		t.Fatalf("after the restart: %s, %d runs", again.Result, runs.Load())
	}
}

// gatedStore is a state store whose Consume waits, once entered is
// signalled, until release is closed: the moment a replica that loses the
// race for a continuation has registered its run.
type gatedStore struct {
	durable.Store
	entered chan struct{}
	release chan struct{}
}

func (g gatedStore) Consume(ctx context.Context, id string, mark []byte, lease time.Duration, expires time.Time) (bool, durable.Record, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Store.Consume(ctx, id, mark, lease, expires)
}

// TestResumeLostRaceAnswersJoiners: two replicas share a store; while one
// replica's resume waits to use the continuation, a second call on that
// replica joins it, and the other replica uses the continuation first and
// keeps the outcome. Both calls on the losing replica get the kept
// outcome; none waits for a run that never starts.
func TestResumeLostRaceAnswersJoiners(t *testing.T) {
	shared := durable.NewMemoryStore(0)
	gate := gatedStore{Store: shared, entered: make(chan struct{}, 1), release: make(chan struct{})}
	var runs atomic.Int64
	entered, release := make(chan struct{}, 4), make(chan struct{})
	close(release)
	a, _ := retryExecutor(t, durable.Config{Store: shared}, -1, holdTool(&runs, entered, release))
	b, _ := retryExecutor(t, durable.Config{Store: gate}, -1, holdTool(&runs, entered, release))
	res, answers := pauseAt(t, a, "x")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type answer struct {
		res  *core.Result
		ferr *fault.Error
	}
	first := make(chan answer, 1)
	go func() {
		r, ferr := b.Continue(ctx, prepare(t, b, res.Continuation, answers))
		first <- answer{r, ferr}
	}()
	<-gate.entered // b registered its run and waits to use the continuation
	joined, ferr := b.StartResume(ctx, prepare(t, b, res.Continuation, answers), Detach{})
	if ferr != nil || !joined.Retry() {
		t.Fatalf("the second call did not join the first: %v", ferr)
	}
	won, ferr := a.Continue(ctx, prepare(t, a, res.Continuation, answers))
	if ferr != nil || won.Error != nil {
		t.Fatal(ferr, won.Error)
	}
	close(gate.release)
	got := <-first
	second, ferr := joined.Wait(ctx)
	for i, got := range []answer{got, {second, ferr}} {
		if got.ferr != nil || string(got.res.Result) != string(won.Result) {
			t.Fatalf("call %d on the losing replica: %v %v, want the kept outcome %s", i+1, got.ferr, got.res, won.Result)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("the held tool ran %d times", runs.Load())
	}
}

// TestResumeWithoutARemovedTool: a replica that lacks a server tool the
// paused execution could call (removed in a rolling deploy) still resumes
// it: calls made before the pause answer from the journal, and a call of
// the missing tool after it fails with unknown_tool, as in a fresh
// execution — also when the caller asked to approve that tool.
func TestResumeWithoutARemovedTool(t *testing.T) {
	var runs atomic.Int64
	removed := tools.Tool{Definition: tools.Definition{Name: "legacy"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
		return json.RawMessage(`"legacy"`), nil
	}}
	store := durable.NewMemoryStore(0)
	before, _ := retryExecutor(t, durable.Config{Store: store}, -1, counted(&runs), removed)
	after, _ := retryExecutor(t, durable.Config{Store: store}, -1, counted(&runs))
	for _, tc := range []struct {
		name string
		req  core.Request
	}{
		{"all tools", core.Request{}},
		{"allowed by name", core.Request{AllowedTools: []string{"count", "legacy"}}},
		{"only the removed one", core.Request{AllowedTools: []string{"legacy"}}},
		{"approval asked for the removed one", core.Request{RequireApproval: []string{"legacy"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.Script = core.Script{Source: `
				const early = await tools.legacy({});
				const a = await tools.ask({});
				let late;
				try { await tools.legacy({}) } catch (e) { late = e.code }
				return {early, a, late}`}
			req.Resumable, req.ClientTools = true, []tools.Tool{askTool}
			if len(tc.req.RequireApproval) > 0 {
				// The approval of the first call is the first pause.
				res := run(t, before, req)
				if len(res.Pending) != 1 {
					t.Fatalf("not paused for approval: %+v", res)
				}
				req = core.Request{}
				res = resume(t, before, res, core.Answer{CallID: res.Pending[0].CallID, Approve: true})
				out := resume(t, after, res, core.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`1`)})
				if out.Error != nil || string(out.Result) != `{"early":"legacy","a":1,"late":"unknown_tool"}` {
					t.Fatalf("%s %v", out.Result, out.Error)
				}
				return
			}
			res := run(t, before, req)
			if len(res.Pending) != 1 {
				t.Fatalf("not paused: %+v", res)
			}
			out := resume(t, after, res, core.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`1`)})
			if out.Error != nil || string(out.Result) != `{"early":"legacy","a":1,"late":"unknown_tool"}` {
				t.Fatalf("%s %v", out.Result, out.Error)
			}
		})
	}
}
