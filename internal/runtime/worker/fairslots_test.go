package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/runtime/wasm"
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

// TestOwnerCompilesBounded: an owner has at most MaxOwnerCompiles
// distinct modules compiling at once; one more is refused with
// wasm.ErrCompileLimit, while a request for a module already compiling
// joins it and another owner starts its own; once one ends, the owner
// may start another.
func TestOwnerCompilesBounded(t *testing.T) {
	c := newCompiler(wasm.Config{})
	var calls []*compileCall
	for i := range MaxOwnerCompiles {
		call, cctx, err := c.begin("bob", fmt.Sprint("h", i))
		if err != nil || cctx == nil {
			t.Fatalf("bob's compile %d: %v", i, err)
		}
		calls = append(calls, call)
	}
	if _, _, err := c.begin("bob", "h-more"); !errors.Is(err, wasm.ErrCompileLimit) || !strings.Contains(err.Error(), "4 modules of this caller are already compiling or waiting") {
		t.Fatalf("bob's one more: %v", err)
	}
	if call, cctx, err := c.begin("bob", "h0"); err != nil || cctx != nil || call != calls[0] {
		t.Fatalf("bob's repeat of a module compiling: %v, joined %v", err, call == calls[0])
	}
	_, alice, err := c.begin("alice", "a0")
	if err != nil || alice == nil {
		t.Fatalf("alice's: %v", err)
	}
	c.end("bob", "h1", calls[1], nil)
	if !c.isChecked("h1") {
		t.Fatal("a module compiled is not remembered as checked")
	}
	if _, cctx, err := c.begin("bob", "h-more"); err != nil || cctx == nil {
		t.Fatalf("bob's after one ended: %v", err)
	}
	if c.owned["bob"] != MaxOwnerCompiles || c.owned["alice"] != 1 {
		t.Fatalf("counts %v", c.owned)
	}
}
