package durable

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ptcrun/ptc/internal/durable/pgtest"
)

// openPostgres opens a PostgreSQL store on a database of its own for t.
func openPostgres(t *testing.T, opt PostgresOptions) (Store, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
	s := openOrFatal(t, func() (Store, error) { return OpenPostgres(context.Background(), dsn, opt) })
	return s, dsn
}

// TestPostgresMaxBytes hits the bound on a stored body, mark and outcome:
// one byte over is refused with ErrTooLarge and nothing is written; the
// bound itself is kept.
func TestPostgresMaxBytes(t *testing.T) {
	s, _ := openPostgres(t, PostgresOptions{MaxBytes: 16})
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	at, over := make([]byte, 16), make([]byte, 17)
	if _, _, err := s.Consume(ctx, "u", []byte("r"), time.Minute, exp); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"put a state at the bound", s.Put(ctx, "a", at, exp, Quota{})},
		{"put a state over it", s.Put(ctx, "b", over, exp, Quota{})},
		{"consume with a mark over it", second3(s.Consume(ctx, "c", over, time.Minute, exp))},
		{"finish with a mark over it", s.Finish(ctx, "u", 1, over, nil, exp, exp)},
		{"finish with an outcome over it", s.Finish(ctx, "u", 1, []byte("f"), over, exp, exp)},
	} {
		want := ErrTooLarge
		if strings.HasSuffix(tc.name, "at the bound") {
			want = nil
		}
		if !errors.Is(tc.err, want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, want)
		}
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a state over the bound was stored: %v", err)
	}
	if _, err := s.Used(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a use with a mark over the bound was recorded: %v", err)
	}
	if rec, err := s.Used(ctx, "u"); err != nil || string(rec.Mark) != "r" || !rec.Held {
		t.Fatalf("a finish over the bound changed the use: %+v %v", rec, err)
	}
}

// second3 is Consume's error.
func second3(_ bool, _ Record, err error) error { return err }

// TestPostgresStatementTimeout: a statement that waits on a row another
// session holds locked ends at the statement timeout, with an error that
// says so, instead of holding the resume up.
func TestPostgresStatementTimeout(t *testing.T) {
	s, dsn := openPostgres(t, PostgresOptions{StatementTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	if _, _, err := s.Consume(ctx, "locked", []byte("r"), time.Minute, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	c := pgConnect(t, dsn)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT 1 FROM ptc_durable_uses WHERE id = 'locked' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	err = s.Renew(ctx, "locked", 1, time.Minute)
	if err == nil || errors.Is(err, ErrFenced) || !strings.Contains(err.Error(), "statement timed out") {
		t.Fatalf("renewal of a locked row: %v, want a statement timeout", err)
	}
}

// TestPostgresOpenErrors: a server that never answers is given up at the
// connect timeout, a malformed DSN is refused, and neither error quotes
// the password.
func TestPostgresOpenErrors(t *testing.T) {
	// A listener that accepts connections (the kernel does) and never
	// answers the startup message.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const password = "s3cret-Passw0rd"
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"silent server", fmt.Sprintf("postgres://ptc:%s@%s/ptc?sslmode=disable", password, l.Addr()), "timeout"},
		{"malformed url", "postgres://ptc:" + password + "@127.0.0.1:notaport/ptc", "not a valid connection string"},
		{"malformed pairs", "host=127.0.0.1 password=" + password + " port", "not a valid connection string"},
		{"unknown sslmode", "host=127.0.0.1 password=" + password + " sslmode=sometimes", "not a valid connection string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenPostgres(context.Background(), tc.dsn, PostgresOptions{ConnectTimeout: 200 * time.Millisecond})
			if err == nil {
				_ = s.Close()
				t.Fatal("opened")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), password) {
				t.Fatalf("error %q: want %q, without the password", err, tc.want)
			}
		})
	}
}

// TestPostgresSweep: rows past their expiry are invisible at once, and a
// sweep deletes them (and only them) from every table.
func TestPostgresSweep(t *testing.T) {
	s, dsn := openPostgres(t, PostgresOptions{})
	ctx := context.Background()
	past, future := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	for _, id := range []string{"old", "new"} {
		exp := future
		if id == "old" {
			exp = past
		}
		if err := s.Put(ctx, id, []byte("state"), exp, Quota{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Consume(ctx, id, []byte("r"), time.Minute, exp); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx, id, 1, []byte("f"), []byte("outcome"), exp, future); err != nil && id == "new" {
			t.Fatal(err)
		}
	}
	if _, err := s.Get(ctx, "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an expired state is visible: %v", err)
	}
	n, err := s.(*postgresStore).sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("swept %d rows, want the expired state and use", n)
	}
	c := pgConnect(t, dsn)
	for _, table := range []string{"ptc_durable_states", "ptc_durable_uses", "ptc_durable_outcomes"} {
		rows, _ := c.Query(ctx, "SELECT id FROM "+table+" ORDER BY id")
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(ids, ",") != "new" {
			t.Errorf("%s holds %v after the sweep, want [new]", table, ids)
		}
	}
}

// TestPostgresSchemaRace: replicas starting together on an empty
// database all open the store (the schema is created once, under a lock).
func TestPostgresSchemaRace(t *testing.T) {
	dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := OpenPostgres(context.Background(), dsn, PostgresOptions{})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestPostgresTwoManagers: two Managers, as two replicas, each with its
// own client of one PostgreSQL store, resume the same continuations at
// once from many goroutines: each continuation is used exactly once, a
// state stored by one is found by the other, and after the lease lapses
// exactly one of them takes the resume over.
func TestPostgresTwoManagers(t *testing.T) {
	dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
	managers := make([]*Manager, 2)
	for i := range managers {
		s, err := OpenPostgres(context.Background(), dsn, PostgresOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A small token bound sends every state to the store; a lease
		// of 100ms lets the takeover below happen soon.
		managers[i] = newManager(t, Config{Keys: []Key{key1}, Store: s, MaxTokenBytes: 1024,
			Lease: 100 * time.Millisecond, LeaseRenew: 50 * time.Millisecond})
		defer managers[i].Close()
	}
	ctx := context.Background()
	st := testState()
	st.Input = []byte(`"` + strings.Repeat("x", 2048) + `"`)
	const conts, callers = 20, 8
	answers := sha256.Sum256([]byte("answers"))
	for c := range conts {
		sealed, ferr := managers[c%2].Seal(ctx, "tenant", st)
		if ferr != nil {
			t.Fatal(ferr)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		first, used := 0, 0
		var opened []*Opened
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := managers[i%2]
				o, ferr := m.Open(ctx, sealed.Token, "tenant")
				if ferr != nil {
					t.Error(ferr)
					return
				}
				u, ferr := m.Consume(ctx, o, answers, time.Now().Add(time.Minute))
				if ferr != nil {
					t.Error(ferr)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if u == nil {
					first++
				} else {
					used++
				}
				opened = append(opened, o)
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		if first != 1 || used != callers-1 {
			t.Fatalf("continuation %d: %d first uses, %d refused", c, first, used)
		}
		if c > 0 {
			continue
		}
		// The lease of the first use lapses (nobody renews it); both
		// replicas see it lapsed and try to take it over at once.
		var use *Use
		for deadline := time.Now().Add(10 * time.Second); ; {
			u, ferr := managers[0].Used(ctx, opened[0])
			if ferr != nil {
				t.Fatal(ferr)
			}
			if u.Lapsed() {
				use = u
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the lease did not lapse")
			}
		}
		won := make(chan uint64, callers)
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fence, ok, ferr := managers[i%2].TakeOver(ctx, opened[i], use)
				if ferr != nil {
					t.Error(ferr)
				}
				if ok {
					won <- fence
				}
			}()
		}
		wg.Wait()
		close(won)
		var fences []uint64
		for f := range won {
			fences = append(fences, f)
		}
		if len(fences) != 1 || fences[0] != 2 {
			t.Fatalf("takeovers won: %v", fences)
		}
	}
}

// BenchmarkPostgresLeaseRenew measures one lease renewal against a real
// PostgreSQL server on this machine (over its Unix socket): one UPDATE,
// one round trip — the Redis store's BenchmarkRedisLeaseRenew, for
// PostgreSQL.
func BenchmarkPostgresLeaseRenew(b *testing.B) {
	dsn := pgtest.NewDatabase(b, pgtest.Start(b))
	s, err := OpenPostgres(context.Background(), dsn, PostgresOptions{})
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

// TestPostgresSchemaRefused: a role that may not create the tables (no
// CREATE on the schema, PostgreSQL 15's default for public) cannot open
// an empty database, and the error says why; once the tables exist, the
// same role opens the store with table privileges alone.
func TestPostgresSchemaRefused(t *testing.T) {
	dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
	ctx := context.Background()
	c := pgConnect(t, dsn)
	role := fmt.Sprintf("plain_%d", time.Now().UnixNano())
	for _, q := range []string{"CREATE ROLE " + role + " LOGIN", "REVOKE CREATE ON SCHEMA public FROM PUBLIC"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	plain := dsn + " user=" + role
	if s, err := OpenPostgres(ctx, plain, PostgresOptions{}); err == nil {
		_ = s.Close()
		t.Fatal("a role without CREATE created the tables")
	} else if !strings.Contains(err.Error(), "may not create the store's tables") || !strings.Contains(err.Error(), "permission denied for schema public") {
		t.Fatalf("error %q does not say why", err)
	}
	openOrFatal(t, func() (Store, error) { return OpenPostgres(ctx, dsn, PostgresOptions{}) })
	if _, err := c.Exec(ctx, "GRANT SELECT, INSERT, UPDATE, DELETE ON ptc_durable_states, ptc_durable_uses, ptc_durable_outcomes TO "+role); err != nil {
		t.Fatal(err)
	}
	s := openOrFatal(t, func() (Store, error) { return OpenPostgres(ctx, plain, PostgresOptions{}) })
	if first, _, err := s.Consume(ctx, "x", []byte("r"), time.Minute, time.Now().Add(time.Hour)); err != nil || !first {
		t.Fatalf("consume with table privileges: %v %v", first, err)
	}
	// A token no store issues (beyond bigint) fences nothing in.
	if err := s.Renew(ctx, "x", math.MaxUint64, time.Minute); !errors.Is(err, ErrFenced) {
		t.Fatalf("renew with a token beyond bigint: %v", err)
	}
}

// TestPostgresUpgrade: the states table of an older release (no tenant
// column) is brought up to date at open; its states count for the
// empty tenant until they expire.
func TestPostgresUpgrade(t *testing.T) {
	dsn := pgtest.NewDatabase(t, pgtest.Shared(t))
	ctx := context.Background()
	c := pgConnect(t, dsn)
	old := `CREATE TABLE ptc_durable_states (id text PRIMARY KEY, body bytea NOT NULL, expires timestamptz NOT NULL);
INSERT INTO ptc_durable_states VALUES ('legacy', '\x0102030405', now() + interval '1 hour')`
	if _, err := c.Exec(ctx, old); err != nil {
		t.Fatal(err)
	}
	s := openOrFatal(t, func() (Store, error) { return OpenPostgres(ctx, dsn, PostgresOptions{}) })
	if b, err := s.Get(ctx, "legacy"); err != nil || len(b) != 5 {
		t.Fatalf("the older release's state: %q %v", b, err)
	}
	testQuotaSteps(t, s, Quota{MaxTenantBytes: 10}, []quotaStep{
		{name: "a tenant's state", id: "a1", tenant: "a", size: 10, expires: time.Hour},
		{name: "the older release's state counts for the empty tenant", id: "e1", tenant: "", size: 6, expires: time.Hour,
			want: &QuotaError{Limit: 10, Used: 5, Size: 6}},
	})
}

// pgConnect connects to dsn, closed when the test ends.
func pgConnect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}
