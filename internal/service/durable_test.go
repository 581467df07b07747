package service

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/durable/pgtest"
	"github.com/ptcrun/ptc/internal/fault"
)

// TestDurableStoreBounds: durable.max_bytes_per_tenant and
// durable.max_bytes reach the continuation manager: the pause that would
// pass one ends with PAUSE_LIMIT naming it.
func TestDurableStoreBounds(t *testing.T) {
	// A state of ~6 KiB that does not compress: stored, not in a token.
	noise := make([]byte, 6<<10)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	st := &durable.State{ExecutionID: "ex", Input: json.RawMessage(`"` + hex.EncodeToString(noise) + `"`)}
	for _, tc := range []struct {
		name, bounds string
		tenants      []string
		limit        int64
		key          string
	}{
		{"per tenant", "max_bytes_per_tenant: 8KiB", []string{"a", "a"}, 8 << 10, "durable.max_bytes_per_tenant (8192)"},
		{"in all", "max_bytes_per_tenant: 8KiB\n  max_bytes: 10KiB", []string{"a", "b"}, 10 << 10, "durable.max_bytes (10240)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := "durable:\n  max_token_bytes: 1KiB\n  " + tc.bounds + "\n  store: {file: " + filepath.Join(t.TempDir(), "d.db") + "}\n"
			m := managerOf(t, y)
			if _, ferr := m.Seal(context.Background(), tc.tenants[0], st); ferr != nil {
				t.Fatal(ferr)
			}
			_, ferr := m.Seal(context.Background(), tc.tenants[1], st)
			if ferr == nil || ferr.Kind != fault.KindPauseLimit || ferr.Limit != tc.limit || !strings.Contains(ferr.Message, tc.key) {
				t.Fatalf("second pause: %+v, want PAUSE_LIMIT naming %s", ferr, tc.key)
			}
		})
	}
}

// TestDurableLease: the lease section reaches the continuation manager;
// max_takeovers 0 takes no resume over (the manager's own zero would be
// its default).
func TestDurableLease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		yaml       string
		ttl, renew time.Duration
		takeovers  int
	}{
		{"defaults", "", 15 * time.Second, 5 * time.Second, 3},
		{"set", "durable:\n  lease: {ttl: 2s, renew_every: 500ms, max_takeovers: 7}\n", 2 * time.Second, 500 * time.Millisecond, 7},
		{"no takeovers", "durable:\n  lease: {max_takeovers: 0}\n", 15 * time.Second, 5 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := managerOf(t, tc.yaml)
			ttl, renew := m.Lease()
			if ttl != tc.ttl || renew != tc.renew || m.MaxTakeovers() != tc.takeovers {
				t.Fatalf("lease %s, renewed every %s, %d takeovers", ttl, renew, m.MaxTakeovers())
			}
		})
	}
}

// TestDurablePostgres: the store section's PostgreSQL connection string
// comes from the environment variable or the file it names, and each way
// it can be missing or wrong is a start-up error that never quotes the
// password.
func TestDurablePostgres(t *testing.T) {
	dsn := pgtest.Start(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const password = "s3cret-Passw0rd"
	lookup := env(map[string]string{"PG": dsn, "PG_BAD": "host=127.0.0.1 port=1 user=ptc password=" + password + " connect_timeout=5"})
	for _, tc := range []struct {
		name, store, err string
	}{
		{"from the environment", "{postgres_dsn_env: PG}", ""},
		{"from a file", "{postgres_dsn_file: " + write("dsn", dsn+"\n") + "}", ""},
		{"variable not set", "{postgres_dsn_env: PG_UNSET}", "environment variable PG_UNSET (durable.store.postgres_dsn_env) is not set"},
		{"no file", "{postgres_dsn_file: " + filepath.Join(dir, "none") + "}", "no such file"},
		{"empty file", "{postgres_dsn_file: " + write("empty", "\n") + "}", "is empty"},
		{"file too large", "{postgres_dsn_file: " + write("large", strings.Repeat("x", maxDSNFileBytes+1)) + "}", "larger than 65536 bytes"},
		{"server not there", "{postgres_dsn_env: PG_BAD}", "postgres at host=127.0.0.1 port=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse([]byte("durable:\n  store: " + tc.store + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := durableManager(context.Background(), c, lookup)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				_ = m.Close()
				return
			}
			if err == nil {
				_ = m.Close()
				t.Fatalf("no error, want %q", tc.err)
			}
			if !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), password) {
				t.Fatalf("error %q: want %q, without the password", err, tc.err)
			}
		})
	}
}

// managerOf is the continuation manager of the configuration y (no
// environment), closed when the test ends.
func managerOf(t *testing.T, y string) *durable.Manager {
	t.Helper()
	c, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	m, err := durableManager(context.Background(), c, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}
