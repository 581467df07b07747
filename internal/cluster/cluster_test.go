package cluster_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/cluster"
	"github.com/ptcrun/ptc/internal/durable/redistest"
)

// replicas opens two Stores on one Redis server: two replicas' views.
func replicas(t *testing.T) (*cluster.Store, *cluster.Store) {
	t.Helper()
	url := redistest.Start(t)
	prefix := fmt.Sprintf("test:%s:", t.Name())
	open := func() *cluster.Store {
		s, err := cluster.OpenRedis(context.Background(), url, prefix, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return open(), open()
}

func TestOwners(t *testing.T) {
	a, b := replicas(t)
	ctx := context.Background()
	if err := a.Claim(ctx, "p1", "10.0.0.1:50051", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, id, want string
	}{
		{"recorded by the other replica", "p1", "10.0.0.1:50051"},
		{"never recorded", "p2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.Owner(ctx, tc.id)
			if err != nil || got != tc.want {
				t.Fatalf("Owner(%s) = %q, %v; want %q", tc.id, got, err, tc.want)
			}
		})
	}
	// An owner expires on its own.
	if err := a.Claim(ctx, "p3", "10.0.0.1:50051", time.Now().Add(-time.Second)); err == nil {
		if got, _ := b.Owner(ctx, "p3"); got != "" {
			t.Fatalf("an expired owner is %q", got)
		}
	}
}

// TestRateAcrossReplicas: one bucket per tenant, whichever replica takes
// from it; tenants do not share buckets.
func TestRateAcrossReplicas(t *testing.T) {
	a, b := replicas(t)
	ctx := context.Background()
	const burst = 4
	taken := 0
	var wait time.Duration
	for i := range 2 * burst {
		q := []*cluster.Store{a, b}[i%2]
		w, err := q.Allow(ctx, "t1", 0.5, burst)
		if err != nil {
			t.Fatal(err)
		}
		if w == 0 {
			taken++
		} else {
			wait = w
		}
	}
	if taken != burst || wait <= 0 || wait > 2*time.Second {
		t.Fatalf("%d of %d taken over two replicas (want the burst, %d), last wait %s", taken, 2*burst, burst, wait)
	}
	if w, err := a.Allow(ctx, "t2", 0.5, burst); err != nil || w != 0 {
		t.Fatalf("another tenant: wait %s, %v", w, err)
	}
	if _, err := a.Allow(ctx, "t1", 0, burst); err == nil {
		t.Fatal("a zero rate was taken")
	}
}

// TestSlotsAcrossReplicas: max slots across replicas; a released slot
// is free again; a lease not renewed lapses (its replica died); a renewal
// keeps it.
func TestSlotsAcrossReplicas(t *testing.T) {
	a, b := replicas(t)
	ctx := context.Background()
	l1, ok, err := a.Acquire(ctx, "t", 2, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, _ := b.Acquire(ctx, "t", 2, time.Minute); !ok {
		t.Fatal("the second of two slots was refused")
	}
	if _, ok, _ := b.Acquire(ctx, "t", 2, time.Minute); ok {
		t.Fatal("a third slot of two was granted on the other replica")
	}
	if err := a.Release(ctx, "t", l1); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Acquire(ctx, "t", 2, time.Minute); !ok {
		t.Fatal("a released slot was not free again")
	}

	// A lease of 200ms that is not renewed lapses; a renewed one does not.
	short, ok, _ := a.Acquire(ctx, "u", 1, 200*time.Millisecond)
	if !ok {
		t.Fatal("refused")
	}
	if ok, err := a.Renew(ctx, "u", short, time.Minute); !ok || err != nil {
		t.Fatalf("renew: %v %v", ok, err)
	}
	lapsing, ok, _ := b.Acquire(ctx, "v", 1, 200*time.Millisecond)
	if !ok {
		t.Fatal("refused")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Redis's clock decides when the lease lapses: ask until it has.
		_, ok, err := a.Acquire(ctx, "v", 1, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a lease not renewed did not lapse")
		}
	}
	if ok, _ := b.Renew(ctx, "v", lapsing, time.Minute); ok {
		t.Fatal("a lapsed lease was renewed")
	}
	if _, ok, _ := b.Acquire(ctx, "u", 1, time.Minute); ok {
		t.Fatal("the renewed lease's slot was granted again")
	}
}

// TestStoreDown: every call fails, within its timeout, when the store is
// gone; opening one that does not answer fails.
func TestStoreDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	if _, err := cluster.OpenRedis(context.Background(), "redis://"+addr, "", 200*time.Millisecond); err == nil {
		t.Fatal("opened a store nobody serves")
	}
	if _, err := cluster.OpenRedis(context.Background(), "http://x", "", 0); err == nil {
		t.Fatal("opened a store at a URL that is not redis")
	}
}
