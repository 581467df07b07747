package durable

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/durable/pgtest"
	"github.com/ptcrun/ptc/internal/durable/redistest"
)

// storeKind is one kind of Store the contract runs against.
type storeKind struct {
	name string
	// open returns an empty store for t, closed when t ends, and, for a
	// store that outlives its client, how to reach it again: another
	// client (another replica's), or the file reopened after s is closed.
	open func(t *testing.T) (s Store, again func() Store)
	// lapse returns a lease that lapses, and how to wait until it has, on
	// a store open returned: a skewed clock for a store in this process,
	// a lease of 1ms and a wait for the server's clock for a server.
	lapse func(t *testing.T, s Store) (time.Duration, func(id string))
}

// storeKinds lists every Store: each runs the whole contract.
var storeKinds = []storeKind{
	{
		name: "memory",
		open: func(t *testing.T) (Store, func() Store) { return NewMemoryStore(0), nil },
		lapse: func(t *testing.T, s Store) (time.Duration, func(string)) {
			var c skewed
			s.(*memoryStore).now = c.now
			return time.Minute, c.lapse
		},
	},
	{
		name: "file",
		open: func(t *testing.T) (Store, func() Store) {
			path := filepath.Join(t.TempDir(), "durable.db")
			s := openOrFatal(t, func() (Store, error) { return OpenFile(path) })
			return s, func() Store {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				return openOrFatal(t, func() (Store, error) { return OpenFile(path) })
			}
		},
		lapse: func(t *testing.T, s Store) (time.Duration, func(string)) {
			var c skewed
			s.(*boltStore).now = c.now
			return time.Minute, c.lapse
		},
	},
	{
		name: "redis",
		open: func(t *testing.T) (Store, func() Store) {
			url := redistest.Start(t)
			open := func() (Store, error) { return OpenRedis(context.Background(), url, "test:") }
			return openOrFatal(t, open), func() Store { return openOrFatal(t, open) }
		},
		lapse: serverLapse,
	},
	{
		name: "postgres",
		open: func(t *testing.T) (Store, func() Store) {
			dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
			open := func() (Store, error) { return OpenPostgres(context.Background(), dsn, PostgresOptions{}) }
			return openOrFatal(t, open), func() Store { return openOrFatal(t, open) }
		},
		lapse: serverLapse,
	},
}

// openOrFatal opens a store, closed when t ends.
func openOrFatal(t *testing.T, open func() (Store, error)) Store {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// serverLapse is a lease of 1ms, which the server's clock lapses by the
// time it is asked again; lapse asks until it has (the first answer
// almost always says so).
func serverLapse(t *testing.T, s Store) (time.Duration, func(string)) {
	return time.Millisecond, func(id string) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			if rec, err := s.Used(context.Background(), id); err != nil || !rec.Held {
				return
			}
			runtime.Gosched()
		}
		t.Fatalf("the lease of %s did not lapse", id)
	}
}

// TestStoreContract runs the contract against every kind of store; where
// the store outlives its client, another client (another replica, or the
// file reopened) finds the continuation used and the outcome kept.
func TestStoreContract(t *testing.T) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			s, again := k.open(t)
			testStore(t, s)
			if again == nil {
				return
			}
			other := again()
			ctx := context.Background()
			if first, rec, err := other.Consume(ctx, "once", []byte("other"), time.Minute, time.Now().Add(time.Hour)); err != nil || first || string(rec.Mark) != "run" {
				t.Fatalf("consumed again through another client: %v %q %v", first, rec.Mark, err)
			}
			if b, err := other.Outcome(ctx, "r1"); err != nil || string(b) != "the outcome" {
				t.Fatalf("outcome through another client: %q %v", b, err)
			}
		})
	}
}

// TestStoreLeases runs the lease contract against every kind of store.
func TestStoreLeases(t *testing.T) {
	for _, k := range storeKinds {
		t.Run(k.name, func(t *testing.T) {
			s, _ := k.open(t)
			short, lapse := k.lapse(t, s)
			testLeases(t, s, short, lapse)
		})
	}
}

// TestRedisUnreachable: a server that is not there is an error at open.
func TestRedisUnreachable(t *testing.T) {
	if _, err := OpenRedis(context.Background(), "redis://127.0.0.1:1/0", ""); err == nil {
		t.Fatal("no error for a server that is not there")
	}
}
