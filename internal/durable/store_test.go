package durable

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/durable/redistest"
)

// testStore runs the Store contract against s: put, get, delete, expiry,
// and Consume succeeding exactly once under concurrency.
func testStore(t *testing.T, s Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	if _, err := s.Get(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	if err := s.Put(ctx, "a", []byte("body"), exp); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Get(ctx, "a"); err != nil || string(b) != "body" {
		t.Fatalf("get: %q %v", b, err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	if err := s.Put(ctx, "old", []byte("x"), time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get expired: %v", err)
	}
	// Consume: exactly one of many concurrent callers wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, _, err := s.Consume(ctx, "once", []byte("run"), exp)
			if err != nil {
				t.Error(err)
			}
			if first {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("Consume won %d times", wins)
	}
	if first, _, err := s.Consume(ctx, "other", []byte("run"), exp); err != nil || !first {
		t.Fatalf("consume another: %v %v", first, err)
	}
	testOutcomes(t, s)
}

// testOutcomes runs the outcome half of the contract: the mark recorded
// by Consume, replaced by Finish together with the outcome, which expires
// at its own time.
func testOutcomes(t *testing.T, s Store) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	if _, err := s.Used(ctx, "never"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("used of an unused id: %v", err)
	}
	if _, err := s.Outcome(ctx, "never"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outcome of an unused id: %v", err)
	}
	if first, _, err := s.Consume(ctx, "r1", []byte("running"), exp); err != nil || !first {
		t.Fatalf("consume: %v %v", first, err)
	}
	if first, mark, err := s.Consume(ctx, "r1", []byte("again"), exp); err != nil || first || string(mark) != "running" {
		t.Fatalf("consume again: %v %q %v", first, mark, err)
	}
	if _, err := s.Outcome(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outcome while running: %v", err)
	}
	if err := s.Finish(ctx, "r1", []byte("done"), []byte("the outcome"), time.Now().Add(time.Hour), exp); err != nil {
		t.Fatal(err)
	}
	if mark, err := s.Used(ctx, "r1"); err != nil || string(mark) != "done" {
		t.Fatalf("used after finish: %q %v", mark, err)
	}
	if first, mark, err := s.Consume(ctx, "r1", []byte("again"), exp); err != nil || first || string(mark) != "done" {
		t.Fatalf("consume after finish: %v %q %v", first, mark, err)
	}
	if b, err := s.Outcome(ctx, "r1"); err != nil || string(b) != "the outcome" {
		t.Fatalf("outcome: %q %v", b, err)
	}
	// An outcome past its retention is gone; the use is still recorded.
	if _, _, err := s.Consume(ctx, "r2", []byte("running"), exp); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, "r2", []byte("done"), []byte("old"), time.Now().Add(-time.Second), exp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outcome(ctx, "r2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outcome past its retention: %v", err)
	}
	if mark, err := s.Used(ctx, "r2"); err != nil || string(mark) != "done" {
		t.Fatalf("used past the retention: %q %v", mark, err)
	}
	// A finish without an outcome records the mark only.
	if err := s.Finish(ctx, "r3", []byte("done"), nil, exp, exp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outcome(ctx, "r3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outcome not kept: %v", err)
	}
}

func TestMemoryStore(t *testing.T) { testStore(t, NewMemoryStore(0)) }

// TestMemoryStoreOutcomeBudget fills the memory store's outcome budget:
// the oldest outcomes are dropped first, and one larger than the whole
// budget is not kept.
func TestMemoryStoreOutcomeBudget(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(100)
	exp := time.Now().Add(time.Hour)
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Finish(ctx, id, []byte("done"), make([]byte, 40), exp, exp); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		id   string
		kept bool
	}{{"a", false}, {"b", true}, {"c", true}} {
		if _, err := s.Outcome(ctx, tc.id); (err == nil) != tc.kept {
			t.Errorf("outcome %s: %v, want kept %v", tc.id, err, tc.kept)
		}
	}
	if err := s.Finish(ctx, "huge", []byte("done"), make([]byte, 101), exp, exp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outcome(ctx, "huge"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an outcome larger than the budget was kept: %v", err)
	}
	if _, err := s.Outcome(ctx, "c"); err != nil {
		t.Fatalf("an outcome too large for the budget dropped others: %v", err)
	}
	if m := s.(*memoryStore); m.outcomeBytes != 80 || m.order.Len() != 2 {
		t.Fatalf("accounted %d bytes in %d outcomes", m.outcomeBytes, m.order.Len())
	}
}

func TestFileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "durable.db")
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	testStore(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Used continuations and kept outcomes survive a restart.
	s, err = OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if first, _, err := s.Consume(context.Background(), "once", nil, time.Now().Add(time.Hour)); err != nil || first {
		t.Fatalf("after reopening: %v %v", first, err)
	}
	if b, err := s.Outcome(context.Background(), "r1"); err != nil || string(b) != "the outcome" {
		t.Fatalf("outcome after reopening: %q %v", b, err)
	}
}

// TestRedisStore runs the contract against a real Redis server, through
// two clients as two replicas would.
func TestRedisStore(t *testing.T) {
	url := redistest.Start(t)
	s, err := OpenRedis(context.Background(), url, "test1:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testStore(t, s)
	other, err := OpenRedis(context.Background(), url, "test1:")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if first, mark, err := other.Consume(context.Background(), "once", []byte("other"), time.Now().Add(time.Hour)); err != nil || first || string(mark) != "run" {
		t.Fatalf("another replica consumed it again: %v %q %v", first, mark, err)
	}
	if b, err := other.Outcome(context.Background(), "r1"); err != nil || string(b) != "the outcome" {
		t.Fatalf("another replica's outcome: %q %v", b, err)
	}
	if _, err := OpenRedis(context.Background(), "redis://127.0.0.1:1/0", ""); err == nil {
		t.Fatal("no error for a server that is not there")
	}
}
