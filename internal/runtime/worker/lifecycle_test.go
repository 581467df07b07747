package worker

import (
	"context"
	"sync"
	"testing"
)

// at returns a lifecycle in state s, counting in c (reached through
// allowed moves, so that only the move under test is counted afresh).
func at(t *testing.T, s procState, c *lifeCounts) *lifecycle {
	t.Helper()
	l := &lifecycle{}
	l.begin(c)
	path := map[procState][]procState{
		stateStarting: nil,
		stateReady:    {stateReady},
		stateBusy:     {stateReady, stateBusy},
		stateDraining: {stateReady, stateBusy, stateDraining},
		stateKilled:   {stateKilled},
		stateDied:     {stateDied},
	}[s]
	for _, next := range path {
		if !l.to(next, causeNone, "") {
			t.Fatalf("cannot reach %s through %s", s, next)
		}
	}
	return l
}

// TestLifecycleTransitions tries every move between two states: the
// allowed ones happen, the others are refused and leave the state as it
// was.
func TestLifecycleTransitions(t *testing.T) {
	allowedMoves := map[[2]procState]bool{
		{stateStarting, stateReady}:  true,
		{stateStarting, stateKilled}: true,
		{stateStarting, stateDied}:   true,
		{stateReady, stateBusy}:      true,
		{stateReady, stateKilled}:    true,
		{stateReady, stateDied}:      true,
		{stateBusy, stateReady}:      true,
		{stateBusy, stateDraining}:   true,
		{stateBusy, stateKilled}:     true,
		{stateBusy, stateDied}:       true,
		{stateDraining, stateKilled}: true,
		{stateDraining, stateDied}:   true,
	}
	for from := stateStarting; from < numStates; from++ {
		for to := stateStarting; to < numStates; to++ {
			want := allowedMoves[[2]procState{from, to}]
			t.Run(from.String()+"→"+to.String(), func(t *testing.T) {
				l := at(t, from, &lifeCounts{})
				if got := l.to(to, stopLimit, "a test"); got != want {
					t.Fatalf("move allowed %v, want %v", got, want)
				}
				wantState := from
				if want {
					wantState = to
				}
				if got := l.current(); got != wantState {
					t.Fatalf("state %s after the move, want %s", got, wantState)
				}
			})
		}
	}
	if got := procState(numStates).String(); got != "procState(6)" {
		t.Errorf("an unknown state is named %q", got)
	}
	if allowed(numStates, stateDied) {
		t.Error("a move from an unknown state is allowed")
	}
}

// TestLifecycleCounts: each counter of Stats is added to by the one move
// that defines it, a kill keeps its first cause and reason, and a worker
// the pool killed stays killed when its process is reaped: it is not
// counted as a death.
func TestLifecycleCounts(t *testing.T) {
	type counts struct{ started, died, recycled, killed, shrunk int64 }
	cases := []struct {
		name  string
		from  procState
		moves func(l *lifecycle)
		end   procEnd
		want  counts
	}{
		{"died while busy", stateBusy, func(*lifecycle) {},
			procEnd{state: stateDied}, counts{started: 1, died: 1}},
		{"died while starting", stateStarting, func(*lifecycle) {},
			procEnd{state: stateDied}, counts{started: 1, died: 1}},
		{"killed at a deadline", stateBusy, func(l *lifecycle) { l.to(stateKilled, stopLimit, "deadline") },
			procEnd{stateKilled, stopLimit, "deadline"}, counts{started: 1, killed: 1}},
		{"killed twice keeps the first", stateBusy, func(l *lifecycle) {
			l.to(stateKilled, stopLimit, "deadline")
			l.to(stateKilled, stopClosed, "closed")
		}, procEnd{stateKilled, stopLimit, "deadline"}, counts{started: 1, killed: 1}},
		{"recycled then drained", stateBusy, func(l *lifecycle) {
			l.to(stateDraining, stopRecycle, "retired")
			l.to(stateKilled, stopDrained, "retired")
		}, procEnd{stateKilled, stopDrained, "retired"}, counts{started: 1, recycled: 1}},
		{"recycled then died", stateBusy, func(l *lifecycle) { l.to(stateDraining, stopRecycle, "retired") },
			procEnd{state: stateDied}, counts{started: 1, recycled: 1, died: 1}},
		{"shrunk", stateReady, func(l *lifecycle) { l.to(stateKilled, stopIdle, "idle") },
			procEnd{stateKilled, stopIdle, "idle"}, counts{started: 1, shrunk: 1}},
		{"closed while starting", stateStarting, func(l *lifecycle) { l.to(stateKilled, stopClosed, "closed") },
			procEnd{stateKilled, stopClosed, "closed"}, counts{started: 1}},
		{"closed while busy", stateBusy, func(l *lifecycle) { l.to(stateKilled, stopClosed, "closed") },
			procEnd{stateKilled, stopClosed, "closed"}, counts{started: 1}},
		{"broke the protocol", stateBusy, func(l *lifecycle) { l.to(stateKilled, stopBroken, "protocol") },
			procEnd{stateKilled, stopBroken, "protocol"}, counts{started: 1}},
		{"a dead worker is not killed after", stateBusy, func(l *lifecycle) {
			l.to(stateDied, causeNone, "")
			l.to(stateKilled, stopLimit, "late")
		}, procEnd{state: stateDied}, counts{started: 1, died: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lc lifeCounts
			l := at(t, c.from, &lc)
			c.moves(l)
			if got := l.ended(); got != c.end {
				t.Errorf("ended %+v, want %+v", got, c.end)
			}
			if again := l.ended(); again != c.end {
				t.Errorf("ended again %+v, want %+v", again, c.end)
			}
			got := counts{lc.started.Load(), lc.died.Load(), lc.recycled.Load(), lc.killed.Load(), lc.shrunk.Load()}
			if got != c.want {
				t.Errorf("counts %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestLifecycleConcurrentKills: of kills racing each other,
// exactly one is counted, and the worker does not also count as dead.
func TestLifecycleConcurrentKills(t *testing.T) {
	var lc lifeCounts
	l := at(t, stateBusy, &lc)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		// Each goroutine ends after its one move.
		go func() { defer wg.Done(); l.to(stateKilled, stopLimit, "deadline") }()
	}
	wg.Wait()
	if e := l.ended(); e.state != stateKilled || lc.killed.Load() != 1 || lc.died.Load() != 0 {
		t.Fatalf("ended %+v with %d kills and %d deaths, want one kill", e, lc.killed.Load(), lc.died.Load())
	}
}

// TestIdleWorkerDeath: a ready worker killed from outside died — its end
// is its own, though it ran nothing: Stats counts it in Died (and in no
// counter of the pool's own kills), the exit log records a death, and the
// pool never hands it an execution.
func TestIdleWorkerDeath(t *testing.T) {
	var sink logSink
	p := newPool(t, Config{Workers: 1, Logger: sink.logger()})
	p.mu.Lock()
	var victim *proc
	for w := range p.procs {
		victim = w
	}
	p.mu.Unlock()
	if victim == nil || victim.life.current() != stateReady {
		t.Fatalf("no ready worker: %v", victim)
	}
	if err := killPID(victim.pid); err != nil {
		t.Fatal(err)
	}
	waitFor(t, p, "the dead worker to leave the pool", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		_, in := p.procs[victim]
		return !in
	})
	if s := victim.life.current(); s != stateDied {
		t.Fatalf("the worker ended %s, want died", s)
	}
	if s := p.Stats(); s.Died != 1 || s.Killed != 0 || s.Recycled != 0 || s.Shrunk != 0 {
		t.Errorf("stats %+v, want one death and nothing else", s)
	}
	if d := deathRecords(t, &sink); len(d) != 1 {
		t.Errorf("%d death records, want 1: %v", len(d), d)
	}
	job, _ := newJob(t, `return 6`, testLimits())
	if out := p.Run(context.Background(), job); out.Err != nil || string(out.Result) != "6" {
		t.Fatalf("after the death: %s %v", out.Result, out.Err)
	}
}
