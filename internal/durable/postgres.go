package durable

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresStore is a Store in PostgreSQL, shared by every replica that
// points at the same database, with the Redis store's semantics: a
// continuation used on one replica is refused on all (INSERT … ON
// CONFLICT), the replica running a resume holds a lease that the others
// respect and take over once it lapses (UPDATE … WHERE fence = …, so
// that a row lock orders concurrent takeovers and the fencing token
// decides), and paused states and outcomes are found by all. Every
// comparison with a time — expiry, lease — uses the server's clock
// (clock_timestamp()), never a replica's. Rows past their expiry are
// invisible at once and deleted by a sweep at most once a minute.
type postgresStore struct {
	pool     *pgxpool.Pool
	maxBytes int

	sweeps sweepGate
}

// Defaults of PostgresOptions.
const (
	// DefaultPostgresConnectTimeout bounds a connection's set-up when the
	// DSN sets no connect_timeout.
	DefaultPostgresConnectTimeout = 5 * time.Second
	// DefaultPostgresStatementTimeout is the statement_timeout of the
	// store's sessions when the DSN sets none.
	DefaultPostgresStatementTimeout = 5 * time.Second
	// DefaultPostgresMaxBytes bounds a stored body, mark or outcome (the
	// largest outcome a Manager opens is 256 MiB; bytea holds at most 1 GB).
	DefaultPostgresMaxBytes = 256 << 20
	// postgresMaxConns bounds the store's connections per replica.
	postgresMaxConns = 16
	// sweepBatch bounds the rows one sweep deletes per table.
	sweepBatch = 10000
)

// ErrTooLarge is returned by a store for a body larger than it keeps.
var ErrTooLarge = errors.New("too large for the state store")

// PostgresOptions bounds a PostgreSQL store; zero values take the
// defaults.
type PostgresOptions struct {
	// ConnectTimeout bounds a connection's set-up (DSN's connect_timeout
	// wins when it sets one).
	ConnectTimeout time.Duration
	// StatementTimeout is the sessions' statement_timeout (the DSN's wins
	// when it sets one, e.g. options='-c statement_timeout=2s').
	StatementTimeout time.Duration
	// MaxBytes bounds a stored body, mark or outcome.
	MaxBytes int
}

// postgresSchema creates the store's tables; OpenPostgres runs it under
// an advisory lock, so that replicas starting together do not race.
// Ids are pause ids (hex); times are the continuation's expiry (given by
// the replica) and the lease's end (set by the server's clock).
const postgresSchema = `
CREATE TABLE IF NOT EXISTS ptc_durable_states (
  id      text PRIMARY KEY,
  body    bytea NOT NULL,
  expires timestamptz NOT NULL,
  tenant  text NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS ptc_durable_states_expires ON ptc_durable_states (expires);
CREATE TABLE IF NOT EXISTS ptc_durable_uses (
  id          text PRIMARY KEY,
  mark        bytea NOT NULL,
  expires     timestamptz NOT NULL,
  fence       bigint NOT NULL,
  lease_until timestamptz
);
CREATE INDEX IF NOT EXISTS ptc_durable_uses_expires ON ptc_durable_uses (expires);
CREATE TABLE IF NOT EXISTS ptc_durable_outcomes (
  id      text PRIMARY KEY,
  body    bytea NOT NULL,
  expires timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ptc_durable_outcomes_expires ON ptc_durable_outcomes (expires);
` + postgresUpgrade

// postgresUpgrade brings the tables of an older release up to date: the
// tenant of each state, by which Put bounds them (the states of the
// older release count for the empty tenant; they expire within durable.ttl).
const postgresUpgrade = `
ALTER TABLE ptc_durable_states ADD COLUMN IF NOT EXISTS tenant text NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS ptc_durable_states_tenant ON ptc_durable_states (tenant, expires);
`

// postgresQuotaLock is the advisory lock key (of the bigint key space)
// a Put bounded in all takes ("ptcdurq"); one bounded per tenant takes
// the lock (postgresQuotaClass, hashtext(tenant)) of the two-int key
// space, after it when it takes both.
const (
	postgresQuotaLock  = 0x70746364757271
	postgresQuotaClass = 0x70746371
)

// postgresSchemaLock is the advisory lock key taken while the schema is
// created ("ptcdurb").
const postgresSchemaLock = 0x70746364757262

// OpenPostgres connects to the PostgreSQL database of dsn (a libpq
// connection string, "host=… user=… dbname=…" or
// "postgres://user:password@host:port/db"), checks that it answers, and
// creates the store's tables when they are missing. The password never
// appears in its errors.
func OpenPostgres(ctx context.Context, dsn string, opt PostgresOptions) (Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors redact the password, but not a malformed
		// string's every form: name the fault without the string.
		return nil, errors.New("durable store: postgres dsn is not a valid connection string (key=value pairs or a postgres:// URL)")
	}
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = DefaultPostgresConnectTimeout
	}
	if opt.StatementTimeout <= 0 {
		opt.StatementTimeout = DefaultPostgresStatementTimeout
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultPostgresMaxBytes
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout <= 0 {
		cc.ConnectTimeout = opt.ConnectTimeout
	}
	if _, set := cc.RuntimeParams["statement_timeout"]; !set {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(ms(opt.StatementTimeout), 10)
	}
	if _, set := cc.RuntimeParams["application_name"]; !set {
		cc.RuntimeParams["application_name"] = "ptcd"
	}
	cfg.MaxConns = postgresMaxConns
	where := fmt.Sprintf("postgres at host=%s port=%d dbname=%s user=%s", cc.Host, cc.Port, cc.Database, cc.User)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("durable store: %s: %w", where, redact(err, cc.Password))
	}
	s := &postgresStore{pool: pool, maxBytes: opt.MaxBytes}
	if err := s.createSchema(ctx, opt.ConnectTimeout+opt.StatementTimeout); err != nil {
		pool.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			return nil, fmt.Errorf("durable store: %s: the role may not create the store's tables (grant it CREATE on the schema, or create them as docs/durable.md shows): %w", where, err)
		}
		return nil, fmt.Errorf("durable store: %s: %w", where, redact(err, cc.Password))
	}
	return s, nil
}

// redact replaces err by its text without password, when it has one.
func redact(err error, password string) error {
	if password == "" || !strings.Contains(err.Error(), password) {
		return err
	}
	return errors.New("the connection failed (error text withheld: it quoted the password)")
}

// createSchema runs postgresSchema in one transaction holding the schema
// lock, within timeout, unless the tables are there already: CREATE …
// IF NOT EXISTS needs CREATE on the schema even when it creates nothing,
// and a role given only the tables' privileges must still start.
func (s *postgresStore) createSchema(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var present bool
	err := s.pool.QueryRow(ctx, `SELECT to_regclass('ptc_durable_states') IS NOT NULL
AND to_regclass('ptc_durable_uses') IS NOT NULL AND to_regclass('ptc_durable_outcomes') IS NOT NULL
AND to_regclass('ptc_durable_states_tenant') IS NOT NULL`).Scan(&present)
	if err != nil || present {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(postgresSchemaLock)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, postgresSchema)
		return err
	})
}

// check refuses a body larger than the store keeps.
func (s *postgresStore) check(what string, b []byte) error {
	if len(b) > s.maxBytes {
		return fmt.Errorf("durable store: a %s of %d bytes is larger than the %d bytes a PostgreSQL store keeps: %w", what, len(b), s.maxBytes, ErrTooLarge)
	}
	return nil
}

// pgErr names a statement timeout as such.
func pgErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "57014" {
		return fmt.Errorf("durable store: postgres statement timed out (statement_timeout): %w", err)
	}
	if err != nil {
		return fmt.Errorf("durable store: postgres: %w", err)
	}
	return nil
}

// maybeSweep deletes expired rows at most once a minute (per replica).
func (s *postgresStore) maybeSweep(ctx context.Context) {
	if s.sweeps.due(time.Now()) {
		_, _ = s.sweep(ctx)
	}
}

// sweep deletes up to sweepBatch expired rows of each table and returns
// how many it deleted.
func (s *postgresStore) sweep(ctx context.Context) (int64, error) {
	var n int64
	for _, table := range []string{"ptc_durable_states", "ptc_durable_uses", "ptc_durable_outcomes"} {
		tag, err := s.pool.Exec(ctx, "DELETE FROM "+table+" WHERE id IN (SELECT id FROM "+table+
			" WHERE expires <= clock_timestamp() LIMIT "+strconv.Itoa(sweepBatch)+")")
		if err != nil {
			return n, pgErr(err)
		}
		n += tag.RowsAffected()
	}
	return n, nil
}

// Put sums the unexpired states of the tenant (and of all, when q bounds
// them) and inserts the new one in one transaction, holding advisory
// locks that order the Puts of a tenant (of all) on every replica, so
// that two cannot both pass a bound that admits one. Sizes are
// octet_length(body), which reads no TOASTed body.
func (s *postgresStore) Put(ctx context.Context, id string, body []byte, expires time.Time, q Quota) error {
	if err := s.check("paused state", body); err != nil {
		return err
	}
	s.maybeSweep(ctx)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var tenant, total int64
		if q.MaxTotalBytes > 0 {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(postgresQuotaLock)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", int32(postgresQuotaClass), q.Tenant); err != nil {
			return err
		}
		if q.MaxTotalBytes > 0 {
			if err := tx.QueryRow(ctx, `SELECT coalesce(sum(octet_length(body)) FILTER (WHERE tenant = $1), 0)::bigint,
coalesce(sum(octet_length(body)), 0)::bigint FROM ptc_durable_states WHERE expires > clock_timestamp() AND id <> $2`,
				q.Tenant, id).Scan(&tenant, &total); err != nil {
				return err
			}
		} else if q.MaxTenantBytes > 0 {
			if err := tx.QueryRow(ctx, `SELECT coalesce(sum(octet_length(body)), 0)::bigint FROM ptc_durable_states
WHERE tenant = $1 AND expires > clock_timestamp() AND id <> $2`, q.Tenant, id).Scan(&tenant); err != nil {
				return err
			}
		}
		if err := q.admit(tenant, total, int64(len(body))); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO ptc_durable_states (id, body, expires, tenant) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, expires = EXCLUDED.expires, tenant = EXCLUDED.tenant`, id, body, expires, q.Tenant)
		return err
	})
	if errors.Is(err, ErrQuota) {
		return err
	}
	return pgErr(err)
}

func (s *postgresStore) Get(ctx context.Context, id string) ([]byte, error) {
	return s.get(ctx, "SELECT body FROM ptc_durable_states WHERE id = $1 AND expires > clock_timestamp()", id)
}

// get returns the one bytea of query, or ErrNotFound.
func (s *postgresStore) get(ctx context.Context, query, id string) ([]byte, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, query, id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, pgErr(err)
	}
	return b, nil
}

func (s *postgresStore) Delete(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, "DELETE FROM ptc_durable_states WHERE id = $1", id)
	return pgErr(err)
}

// A use is one row of ptc_durable_uses: the Manager's mark, the latest
// fencing token, and until when its holder's lease lasts (NULL once the
// use finished). A mark beginning with 'r' (0x72) is a running use.
const runningSQL = `substring(mark from 1 for 1) = '\x72'::bytea`

// leaseSQL is the end of a lease of $n milliseconds from now.
func leaseSQL(n int) string {
	return "clock_timestamp() + $" + strconv.Itoa(n) + " * interval '1 millisecond'"
}

// Consume inserts the use, or takes the place of an expired one not yet
// swept; a live one is left as it is and read back. Concurrent callers
// wait on the row's lock and see the winner's row, so exactly one wins.
func (s *postgresStore) Consume(ctx context.Context, id string, mark []byte, lease time.Duration, expires time.Time) (bool, Record, error) {
	if err := s.check("mark", mark); err != nil {
		return false, Record{}, err
	}
	s.maybeSweep(ctx)
	for try := 0; ; try++ {
		tag, err := s.pool.Exec(ctx, `INSERT INTO ptc_durable_uses (id, mark, expires, fence, lease_until)
VALUES ($1, $2, $3, 1, `+leaseSQL(4)+`)
ON CONFLICT (id) DO UPDATE SET mark = EXCLUDED.mark, expires = EXCLUDED.expires, fence = 1, lease_until = EXCLUDED.lease_until
WHERE ptc_durable_uses.expires <= clock_timestamp()`, id, mark, expires, ms(lease))
		if err != nil {
			return false, Record{}, pgErr(err)
		}
		if tag.RowsAffected() == 1 {
			return true, Record{}, nil
		}
		rec, err := s.Used(ctx, id)
		if errors.Is(err, ErrNotFound) && try < 3 {
			// It expired between the two statements: use it now.
			continue
		}
		return false, rec, err
	}
}

func (s *postgresStore) Used(ctx context.Context, id string) (Record, error) {
	var rec Record
	var fence int64
	err := s.pool.QueryRow(ctx, `SELECT mark, fence, coalesce(lease_until > clock_timestamp(), false)
FROM ptc_durable_uses WHERE id = $1 AND expires > clock_timestamp()`, id).Scan(&rec.Mark, &fence, &rec.Held)
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, pgErr(err)
	}
	rec.Fence = uint64(fence)
	if rec.Mark == nil {
		rec.Mark = []byte{}
	}
	return rec, nil
}

// fenceArg is a fencing token as a bigint; a token beyond bigint's range
// (never issued) becomes -1, which matches no row.
func fenceArg(fence uint64) int64 {
	if fence > math.MaxInt64 {
		return -1
	}
	return int64(fence)
}

func (s *postgresStore) Renew(ctx context.Context, id string, fence uint64, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE ptc_durable_uses SET lease_until = `+leaseSQL(3)+`
WHERE id = $1 AND fence = $2 AND expires > clock_timestamp() AND `+runningSQL, id, fenceArg(fence), ms(lease))
	switch {
	case err != nil:
		return pgErr(err)
	case tag.RowsAffected() != 1:
		return ErrFenced
	}
	return nil
}

// TakeOver raises the token of a lapsed running use. Concurrent callers
// queue on the row's lock; each re-checks the row the one before left,
// whose token no longer matches, so exactly one wins.
func (s *postgresStore) TakeOver(ctx context.Context, id string, fence uint64, lease time.Duration) (uint64, error) {
	var next int64
	err := s.pool.QueryRow(ctx, `UPDATE ptc_durable_uses SET fence = fence + 1, lease_until = `+leaseSQL(3)+`
WHERE id = $1 AND fence = $2 AND fence > 0 AND expires > clock_timestamp() AND `+runningSQL+`
AND (lease_until IS NULL OR lease_until <= clock_timestamp())
RETURNING fence`, id, fenceArg(fence), ms(lease)).Scan(&next)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, ErrFenced
	case err != nil:
		return 0, pgErr(err)
	}
	return uint64(next), nil
}

// Finish replaces the mark, ends the lease and keeps the outcome in one
// statement: the outcome is written only when the use's row was, that is
// for the holder of the latest token.
func (s *postgresStore) Finish(ctx context.Context, id string, fence uint64, mark, outcome []byte, keepUntil, expires time.Time) error {
	if err := s.check("mark", mark); err != nil {
		return err
	}
	if err := s.check("outcome", outcome); err != nil {
		return err
	}
	var n int
	err := s.pool.QueryRow(ctx, `WITH u AS (
  UPDATE ptc_durable_uses SET mark = $3, expires = $4, lease_until = NULL
  WHERE id = $1 AND fence = $2 AND expires > clock_timestamp()
  RETURNING id
), o AS (
  INSERT INTO ptc_durable_outcomes (id, body, expires)
  SELECT id, $5::bytea, $6::timestamptz FROM u WHERE $7::boolean
  ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, expires = EXCLUDED.expires
  RETURNING id
)
SELECT count(*) FROM u`, id, fenceArg(fence), mark, expires, outcome, keepUntil, outcome != nil).Scan(&n)
	switch {
	case err != nil:
		return pgErr(err)
	case n != 1:
		return ErrFenced
	}
	return nil
}

func (s *postgresStore) Outcome(ctx context.Context, id string) ([]byte, error) {
	return s.get(ctx, "SELECT body FROM ptc_durable_outcomes WHERE id = $1 AND expires > clock_timestamp()", id)
}

func (s *postgresStore) Close() error {
	s.pool.Close()
	return nil
}
