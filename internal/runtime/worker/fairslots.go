package worker

import (
	"context"
	"sync"
)

// fairSlots hands out a fixed number of slots to owners (tenants) that
// ask for them: a free slot at once when nobody waits, and a slot given
// back to the waiting owner that holds the fewest, the earliest asker
// among equals. So one owner's queued work does not stand ahead of every
// other owner's: another owner waits at most for the next slot to free.
type fairSlots struct {
	mu      sync.Mutex
	free    int
	held    map[string]int
	waiting []*slotWaiter // in the order they asked
}

// slotWaiter is an owner waiting for a slot; ready is closed once it was
// given one (granted).
type slotWaiter struct {
	owner   string
	ready   chan struct{}
	granted bool
}

func newFairSlots(n int) *fairSlots {
	return &fairSlots{free: n, held: map[string]int{}}
}

// acquire waits for a slot for owner, or for ctx to end (then it returns
// ctx's error and holds no slot). A slot acquired is given back with
// release.
func (s *fairSlots) acquire(ctx context.Context, owner string) error {
	s.mu.Lock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		s.held[owner]++
		s.mu.Unlock()
		return nil
	}
	w := &slotWaiter{owner: owner, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		// Given a slot as ctx ended: give it on.
		s.mu.Unlock()
		s.release(owner)
		return ctx.Err()
	}
	for i, o := range s.waiting {
		if o == w {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	return ctx.Err()
}

// release gives back a slot of owner's: to the waiting owner that holds
// the fewest slots, or to the free ones.
func (s *fairSlots) release(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[owner]--; s.held[owner] <= 0 {
		delete(s.held, owner)
	}
	if len(s.waiting) == 0 {
		s.free++
		return
	}
	next := 0
	for i, w := range s.waiting {
		if s.held[w.owner] < s.held[s.waiting[next].owner] {
			next = i
		}
	}
	w := s.waiting[next]
	s.waiting = append(s.waiting[:next], s.waiting[next+1:]...)
	s.held[w.owner]++
	w.granted = true
	close(w.ready)
}

// compileOwner is the context key of WithCompileOwner.
type compileOwner struct{}

// WithCompileOwner returns ctx naming owner (a tenant) as the one who
// asks CompileModule for a compile: the compile slots go round the
// owners waiting for them (see fairSlots).
func WithCompileOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, compileOwner{}, owner)
}

// ownerOf is the owner ctx names ("" when none).
func ownerOf(ctx context.Context) string {
	o, _ := ctx.Value(compileOwner{}).(string)
	return o
}
