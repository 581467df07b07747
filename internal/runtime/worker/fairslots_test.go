package worker

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// TestFairSlots: with every slot held by one owner and more of its work
// waiting, a slot given back goes to another owner that waits with none,
// ahead of the first owner's earlier askers; among owners holding as
// many, the earliest asker; a waiter whose context ends leaves the queue.
func TestFairSlots(t *testing.T) {
	s := newFairSlots(2)
	ctx := context.Background()
	for range 2 {
		if err := s.acquire(ctx, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan string, 4)
	wait := func(owner string) {
		if err := s.acquire(ctx, owner); err != nil {
			t.Error(err)
		}
		got <- owner
	}
	// Queued in this order: bob, bob, a waiter that gives up, alice.
	go wait("bob")
	waitQueued(s, 1)
	go wait("bob")
	waitQueued(s, 2)
	gone, giveUp := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() { left <- s.acquire(gone, "carol") }()
	waitQueued(s, 3)
	go wait("alice")
	waitQueued(s, 4)
	giveUp()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter that gave up: %v", err)
	}
	s.release("bob")
	if o := <-got; o != "alice" {
		t.Fatalf("the first slot given back went to %s, not to alice, who held none", o)
	}
	s.release("bob")
	if o := <-got; o != "bob" {
		t.Fatalf("the next went to %s", o)
	}
	s.release("alice")
	if o := <-got; o != "bob" {
		t.Fatalf("the last went to %s", o)
	}
	s.release("bob")
	s.release("bob")
	if s.free != 2 || len(s.held) != 0 || len(s.waiting) != 0 {
		t.Fatalf("left: free %d held %v waiting %d", s.free, s.held, len(s.waiting))
	}
}

// waitQueued returns once n owners wait.
func waitQueued(s *fairSlots, n int) {
	for {
		s.mu.Lock()
		q := len(s.waiting)
		s.mu.Unlock()
		if q >= n {
			return
		}
		runtime.Gosched()
	}
}
