package auth

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// fakeRates is a RateStore that answers wait, or fails with err.
type fakeRates struct {
	wait  time.Duration
	err   error
	calls int
}

func (f *fakeRates) Allow(context.Context, string, float64, int) (time.Duration, error) {
	f.calls++
	return f.wait, f.err
}

// TestSharedRateLimiter: the shared bucket decides while the store
// answers; when it fails the replica's own bucket does (fail open to
// per-replica limits), and the shared one again once it answers.
func TestSharedRateLimiter(t *testing.T) {
	a, err := New(true, []Tenant{{Name: "r", TokenHashes: []string{HashToken(tokenA)}, Rate: 1, Burst: 2}, {Name: "free", TokenHashes: []string{HashToken("another token of the free tenant")}}})
	if err != nil {
		t.Fatal(err)
	}
	rated := WithTenant(context.Background(), a.tenants[0])
	free := WithTenant(context.Background(), a.tenants[1])
	store := &fakeRates{}
	l := NewSharedRateLimiter(NewRateLimiter(a), store, slog.New(slog.DiscardHandler))
	down := errors.New("connection refused")
	steps := []struct {
		name string
		ctx  context.Context
		wait time.Duration
		err  error
		want string // "", "rate" (a RateError)
	}{
		{"shared bucket has a token", rated, 0, nil, ""},
		{"shared bucket is empty", rated, 700 * time.Millisecond, nil, "rate"},
		{"store down: local burst 1 of 2", rated, 0, down, ""},
		{"store down: local burst 2 of 2", rated, 0, down, ""},
		{"store down: local bucket empty", rated, 0, down, "rate"},
		{"store back", rated, 0, nil, ""},
		{"tenant without a rate", free, 0, down, ""},
		{"no tenant", context.Background(), 0, down, ""},
	}
	for _, s := range steps {
		store.wait, store.err = s.wait, s.err
		err := l.Limit(s.ctx)
		var re *RateError
		switch {
		case s.want == "" && err != nil:
			t.Fatalf("%s: %v", s.name, err)
		case s.want == "rate" && !errors.As(err, &re):
			t.Fatalf("%s: %v, want a RateError", s.name, err)
		case s.want == "rate" && s.err == nil && re.RetryAfter != s.wait:
			t.Fatalf("%s: retry after %s, want %s", s.name, re.RetryAfter, s.wait)
		}
	}
	if store.calls != 6 {
		t.Fatalf("the store was asked %d times, want 6 (never for a tenant without a rate)", store.calls)
	}
}
