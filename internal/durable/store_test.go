package durable

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
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
	if err := s.Put(ctx, "a", []byte("body"), exp, Quota{}); err != nil {
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
	if err := s.Put(ctx, "old", []byte("x"), time.Now().Add(-time.Second), Quota{}); err != nil {
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
			first, _, err := s.Consume(ctx, "once", []byte("run"), time.Minute, exp)
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
	if first, _, err := s.Consume(ctx, "other", []byte("run"), time.Minute, exp); err != nil || !first {
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
	if first, _, err := s.Consume(ctx, "r1", []byte("running"), time.Minute, exp); err != nil || !first {
		t.Fatalf("consume: %v %v", first, err)
	}
	if first, mark, err := s.Consume(ctx, "r1", []byte("again"), time.Minute, exp); err != nil || first || string(mark.Mark) != "running" {
		t.Fatalf("consume again: %v %q %v", first, mark.Mark, err)
	}
	if _, err := s.Outcome(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outcome while running: %v", err)
	}
	if err := s.Finish(ctx, "r1", 1, []byte("done"), []byte("the outcome"), time.Now().Add(time.Hour), exp); err != nil {
		t.Fatal(err)
	}
	if mark, err := s.Used(ctx, "r1"); err != nil || string(mark.Mark) != "done" {
		t.Fatalf("used after finish: %q %v", mark.Mark, err)
	}
	if first, mark, err := s.Consume(ctx, "r1", []byte("again"), time.Minute, exp); err != nil || first || string(mark.Mark) != "done" {
		t.Fatalf("consume after finish: %v %q %v", first, mark.Mark, err)
	}
	if b, err := s.Outcome(ctx, "r1"); err != nil || string(b) != "the outcome" {
		t.Fatalf("outcome: %q %v", b, err)
	}
	// An outcome past its retention is gone; the use is still recorded.
	if _, _, err := s.Consume(ctx, "r2", []byte("running"), time.Minute, exp); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, "r2", 1, []byte("done"), []byte("old"), time.Now().Add(-time.Second), exp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outcome(ctx, "r2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outcome past its retention: %v", err)
	}
	if mark, err := s.Used(ctx, "r2"); err != nil || string(mark.Mark) != "done" {
		t.Fatalf("used past the retention: %q %v", mark.Mark, err)
	}
	// A finish without an outcome records the mark only.
	if _, _, err := s.Consume(ctx, "r3", []byte("running"), time.Minute, exp); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, "r3", 1, []byte("done"), nil, exp, exp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outcome(ctx, "r3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("outcome not kept: %v", err)
	}
}

// TestMemoryStoreOutcomeBudget fills the memory store's outcome budget:
// the oldest outcomes are dropped first, and one larger than the whole
// budget is not kept.
func TestMemoryStoreOutcomeBudget(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(100)
	exp := time.Now().Add(time.Hour)
	for _, id := range []string{"a", "b", "c", "huge"} {
		if _, _, err := s.Consume(ctx, id, []byte("r"), time.Minute, exp); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Finish(ctx, id, 1, []byte("done"), make([]byte, 40), exp, exp); err != nil {
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
	if err := s.Finish(ctx, "huge", 1, []byte("done"), make([]byte, 101), exp, exp); err != nil {
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

// testLeases runs the lease half of the contract against s: the lease of
// the first use, renewals, fencing of a stale holder, and a takeover once
// the lease lapsed that exactly one of many concurrent callers wins.
// short is a lease that lapse makes lapse.
func testLeases(t *testing.T, s Store, short time.Duration, lapse func(id string)) {
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	running, finished := []byte("r-running"), []byte("f-finished")
	used := func(id string) Record {
		t.Helper()
		rec, err := s.Used(ctx, id)
		if err != nil {
			t.Fatalf("used %s: %v", id, err)
		}
		return rec
	}
	// A live lease: renewed by its holder, refused to others.
	if first, _, err := s.Consume(ctx, "l1", running, time.Hour, exp); err != nil || !first {
		t.Fatalf("consume: %v %v", first, err)
	}
	if rec := used("l1"); rec.Fence != 1 || !rec.Held || string(rec.Mark) != string(running) {
		t.Fatalf("first use: %+v", rec)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"renew by its holder", s.Renew(ctx, "l1", 1, time.Hour)},
		{"renew by another token", errOr(s.Renew(ctx, "l1", 2, time.Hour))},
		{"take over a live lease", second(s.TakeOver(ctx, "l1", 1, time.Hour))},
		{"take over with a stale token", second(s.TakeOver(ctx, "l1", 0, time.Hour))},
		{"finish by another token", errOr(s.Finish(ctx, "l1", 2, finished, []byte("o"), exp, exp))},
		{"renew a use never made", errOr(s.Renew(ctx, "none", 1, time.Hour))},
		{"take over a use never made", second(s.TakeOver(ctx, "none", 1, time.Hour))},
		{"finish a use never made", errOr(s.Finish(ctx, "none", 1, finished, nil, exp, exp))},
	} {
		want := error(nil)
		if tc.name != "renew by its holder" {
			want = ErrFenced
		}
		if !errors.Is(tc.err, want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, want)
		}
	}
	if _, err := s.Outcome(ctx, "l1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a fenced finish kept its outcome: %v", err)
	}
	if err := s.Finish(ctx, "l1", 1, finished, []byte("o"), exp, exp); err != nil {
		t.Fatal(err)
	}
	if rec := used("l1"); rec.Held || string(rec.Mark) != string(finished) {
		t.Fatalf("finished: %+v", rec)
	}
	if err := s.Renew(ctx, "l1", 1, time.Hour); !errors.Is(err, ErrFenced) {
		t.Fatalf("renew a finished use: %v", err)
	}
	if _, err := s.TakeOver(ctx, "l1", 1, time.Hour); !errors.Is(err, ErrFenced) {
		t.Fatalf("take over a finished use: %v", err)
	}

	// A lapsed lease: exactly one of many takes it over; the old holder
	// is fenced off, the new one finishes.
	if _, _, err := s.Consume(ctx, "l2", running, short, exp); err != nil {
		t.Fatal(err)
	}
	lapse("l2")
	if rec := used("l2"); rec.Fence != 1 || rec.Held {
		t.Fatalf("lapsed: %+v", rec)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []uint64
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := s.TakeOver(ctx, "l2", 1, time.Hour)
			if err != nil && !errors.Is(err, ErrFenced) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				won = append(won, f)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || won[0] != 2 {
		t.Fatalf("takeovers won: %v", won)
	}
	if rec := used("l2"); rec.Fence != 2 || !rec.Held || string(rec.Mark) != string(running) {
		t.Fatalf("taken over: %+v", rec)
	}
	if err := s.Renew(ctx, "l2", 1, time.Hour); !errors.Is(err, ErrFenced) {
		t.Fatalf("the old holder renewed: %v", err)
	}
	if err := s.Finish(ctx, "l2", 1, finished, []byte("old"), exp, exp); !errors.Is(err, ErrFenced) {
		t.Fatalf("the old holder finished: %v", err)
	}
	if err := s.Finish(ctx, "l2", 2, finished, []byte("new"), exp, exp); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Outcome(ctx, "l2"); err != nil || string(b) != "new" {
		t.Fatalf("outcome after a takeover: %q %v", b, err)
	}

	// A holder whose lease lapsed, and nobody took it over, renews it.
	if _, _, err := s.Consume(ctx, "l3", running, short, exp); err != nil {
		t.Fatal(err)
	}
	lapse("l3")
	if err := s.Renew(ctx, "l3", 1, time.Hour); err != nil {
		t.Fatalf("renew a lapsed lease nobody took: %v", err)
	}
	if rec := used("l3"); rec.Fence != 1 || !rec.Held {
		t.Fatalf("renewed after lapsing: %+v", rec)
	}
}

// errOr is err, or an error that is not ErrFenced when err is nil (a
// table entry expecting ErrFenced then fails).
func errOr(err error) error {
	if err == nil {
		return errors.New("no error")
	}
	return err
}

// second is TakeOver's error, or an error when it succeeded.
func second(_ uint64, err error) error { return errOr(err) }

// skewed is a clock that lapse moves on.
type skewed struct{ skew atomic.Int64 }

func (c *skewed) now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

func (c *skewed) lapse(string) { c.skew.Add(int64(2 * time.Minute)) }

// BenchmarkRedisLeaseRenew measures one lease renewal against a real
// Redis server on this machine: one Lua script, one round trip — what a
// store write per tool call would cost a resumed segment.
func BenchmarkRedisLeaseRenew(b *testing.B) {
	url := redistest.Start(b)
	s, err := OpenRedis(context.Background(), url, "bench:")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.Consume(ctx, "b", []byte("r"), time.Minute, time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Renew(ctx, "b", 1, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLeaseConfig: a renewal interval no shorter than the lease is
// refused; the defaults and a negative takeover bound are resolved.
func TestLeaseConfig(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		err        string
		ttl, renew time.Duration
		takeovers  int
	}{
		{name: "defaults", ttl: DefaultLease, renew: DefaultLeaseRenew, takeovers: DefaultMaxTakeovers},
		{name: "short lease", cfg: Config{Lease: 600 * time.Millisecond}, ttl: 600 * time.Millisecond, renew: 200 * time.Millisecond, takeovers: DefaultMaxTakeovers},
		{name: "no takeovers", cfg: Config{MaxTakeovers: -1}, ttl: DefaultLease, renew: DefaultLeaseRenew},
		{name: "renewal too slow", cfg: Config{Lease: time.Second, LeaseRenew: time.Second}, err: "must be shorter than the lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ttl, renew := m.Lease()
			if ttl != tc.ttl || renew != tc.renew || m.MaxTakeovers() != tc.takeovers {
				t.Fatalf("lease %s, renewed every %s, %d takeovers", ttl, renew, m.MaxTakeovers())
			}
		})
	}
}
