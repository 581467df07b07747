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
			first, err := s.Consume(ctx, "once", exp)
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
	if first, err := s.Consume(ctx, "other", exp); err != nil || !first {
		t.Fatalf("consume another: %v %v", first, err)
	}
}

func TestMemoryStore(t *testing.T) { testStore(t, NewMemoryStore()) }

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
	// Used continuations survive a restart.
	s, err = OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if first, err := s.Consume(context.Background(), "once", time.Now().Add(time.Hour)); err != nil || first {
		t.Fatalf("after reopening: %v %v", first, err)
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
	if first, err := other.Consume(context.Background(), "once", time.Now().Add(time.Hour)); err != nil || first {
		t.Fatalf("another replica consumed it again: %v %v", first, err)
	}
	if _, err := OpenRedis(context.Background(), "redis://127.0.0.1:1/0", ""); err == nil {
		t.Fatal("no error for a server that is not there")
	}
}
