package durable

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// boltStore is a Store in one file (bbolt): paused states and used
// continuations survive a restart of the process that owns the file. Only
// one process can open the file at a time, so replicas need a shared
// store (Redis) instead.
type boltStore struct {
	db  *bbolt.DB
	now func() time.Time

	sweeps sweepGate
}

var (
	bucketStates   = []byte("states")
	bucketUsed     = []byte("used")
	bucketOutcomes = []byte("outcomes")
	bucketLeases   = []byte("leases")
	// bucketOwners holds each stored state's tenant and size (see
	// ownerValue); bucketUsage the bytes of each tenant's states, and
	// bucketTotals (under keyStates) those of all: Put, Delete and the
	// sweeps change them in the transaction that changes the states, so
	// they survive a restart as the states do. (A state written by an
	// older release has no owner and counts for nobody.)
	bucketOwners = []byte("owners")
	bucketUsage  = []byte("usage")
	bucketTotals = []byte("totals")
	keyStates    = []byte("states")
)

// OpenFile opens (or creates) the single-file store at path.
func OpenFile(path string) (Store, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("durable store %s: %w (is another process using it?)", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketStates, bucketUsed, bucketOutcomes, bucketLeases, bucketOwners, bucketUsage, bucketTotals} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("durable store %s: %w", path, err)
	}
	s := &boltStore{db: db, now: time.Now}
	s.sweep()
	return s, nil
}

// value is an entry: its expiry (Unix nanoseconds) and its bytes.
func value(expires time.Time, b []byte) []byte {
	v := make([]byte, 8+len(b))
	binary.BigEndian.PutUint64(v, uint64(expires.UnixNano()))
	copy(v[8:], b)
	return v
}

func (s *boltStore) live(v []byte) bool {
	return len(v) >= 8 && s.now().UnixNano() < int64(binary.BigEndian.Uint64(v))
}

// maybeSweep drops expired entries at most once a minute.
func (s *boltStore) maybeSweep() {
	if s.sweeps.due(s.now()) {
		s.sweep()
	}
}

func (s *boltStore) sweep() {
	_ = s.db.Update(func(tx *bbolt.Tx) error {
		if err := s.sweepStates(tx); err != nil {
			return err
		}
		for _, name := range [][]byte{bucketUsed, bucketOutcomes, bucketLeases} {
			b := tx.Bucket(name)
			for _, k := range s.expired(b) {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// expired returns the keys of the expired entries of b (copies: a key
// is valid only until the transaction changes b).
func (s *boltStore) expired(b *bbolt.Bucket) [][]byte {
	var dead [][]byte
	_ = b.ForEach(func(k, v []byte) error {
		if !s.live(v) {
			dead = append(dead, append([]byte(nil), k...))
		}
		return nil
	})
	return dead
}

// sweepStates drops the expired states in tx, giving their bytes back.
func (s *boltStore) sweepStates(tx *bbolt.Tx) error {
	for _, k := range s.expired(tx.Bucket(bucketStates)) {
		if err := s.release(tx, k); err != nil {
			return err
		}
	}
	return nil
}

// ownerValue is a state's entry in the owners bucket: its expiry, its
// size and its tenant.
func ownerValue(expires time.Time, size int64, tenant string) []byte {
	b := make([]byte, 8+len(tenant))
	binary.BigEndian.PutUint64(b, uint64(size))
	copy(b[8:], tenant)
	return value(expires, b)
}

// counter reads a uint64 of a bucket (0 when absent).
func counter(b *bbolt.Bucket, k []byte) int64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// add adds delta to a counter of a bucket, dropping it at zero.
func add(b *bbolt.Bucket, k []byte, delta int64) error {
	n := counter(b, k) + delta
	if n <= 0 {
		return b.Delete(k)
	}
	v := make([]byte, 8)
	binary.BigEndian.PutUint64(v, uint64(n))
	return b.Put(k, v)
}

// usageKey is a tenant's key in the usage bucket (a key is never empty;
// a tenant's name may be).
func usageKey(tenant []byte) []byte { return append([]byte{'t'}, tenant...) }

// charge adds delta bytes to tenant's usage and to the total in tx.
func charge(tx *bbolt.Tx, tenant []byte, delta int64) error {
	if err := add(tx.Bucket(bucketUsage), usageKey(tenant), delta); err != nil {
		return err
	}
	return add(tx.Bucket(bucketTotals), keyStates, delta)
}

// release drops the state id in tx and gives its bytes back to its
// tenant.
func (s *boltStore) release(tx *bbolt.Tx, id []byte) error {
	if err := tx.Bucket(bucketStates).Delete(id); err != nil {
		return err
	}
	owners := tx.Bucket(bucketOwners)
	v := owners.Get(id)
	if len(v) < 16 {
		return nil
	}
	size := int64(binary.BigEndian.Uint64(v[8:]))
	tenant := append([]byte(nil), v[16:]...)
	if err := owners.Delete(id); err != nil {
		return err
	}
	return charge(tx, tenant, -size)
}

// Put sweeps the expired states before it refuses one for its quota:
// until a sweep they still count.
func (s *boltStore) Put(_ context.Context, id string, body []byte, expires time.Time, q Quota) error {
	s.maybeSweep()
	return s.db.Update(func(tx *bbolt.Tx) error {
		k := []byte(id)
		if err := s.release(tx, k); err != nil {
			return err
		}
		size := int64(len(body))
		admit := func() error {
			return q.admit(counter(tx.Bucket(bucketUsage), usageKey([]byte(q.Tenant))), counter(tx.Bucket(bucketTotals), keyStates), size)
		}
		if admit() != nil {
			if err := s.sweepStates(tx); err != nil {
				return err
			}
			if err := admit(); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketOwners).Put(k, ownerValue(expires, size, q.Tenant)); err != nil {
			return err
		}
		if err := charge(tx, []byte(q.Tenant), size); err != nil {
			return err
		}
		return tx.Bucket(bucketStates).Put(k, value(expires, body))
	})
}

func (s *boltStore) Get(_ context.Context, id string) ([]byte, error) {
	return s.get(bucketStates, id)
}

// get returns a live entry of a bucket, or ErrNotFound.
func (s *boltStore) get(bucket []byte, id string) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucket).Get([]byte(id))
		if v == nil || !s.live(v) {
			return ErrNotFound
		}
		out = append([]byte(nil), v[8:]...)
		return nil
	})
	return out, err
}

func (s *boltStore) Delete(_ context.Context, id string) error {
	return s.db.Update(func(tx *bbolt.Tx) error { return s.release(tx, []byte(id)) })
}

// lease is a use's lease in the leases bucket: its latest fencing token
// and until when it is held (Unix nanoseconds), stored with the use's
// expiry.
func leaseValue(expires time.Time, fence uint64, until time.Time) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, fence)
	binary.BigEndian.PutUint64(b[8:], uint64(until.UnixNano()))
	return value(expires, b)
}

// leaseOf reads a use's lease from tx: its token (0: none) and until when
// it is held.
func (s *boltStore) leaseOf(tx *bbolt.Tx, id string) (uint64, time.Time) {
	v := tx.Bucket(bucketLeases).Get([]byte(id))
	if v == nil || !s.live(v) || len(v) != 24 {
		return 0, time.Time{}
	}
	return binary.BigEndian.Uint64(v[8:]), time.Unix(0, int64(binary.BigEndian.Uint64(v[16:])))
}

// record reads the use of id from tx; ok is false when there is none.
func (s *boltStore) record(tx *bbolt.Tx, id string) (Record, time.Time, bool) {
	v := tx.Bucket(bucketUsed).Get([]byte(id))
	if v == nil || !s.live(v) {
		return Record{}, time.Time{}, false
	}
	fence, until := s.leaseOf(tx, id)
	expires := time.Unix(0, int64(binary.BigEndian.Uint64(v)))
	return Record{Mark: append([]byte(nil), v[8:]...), Fence: fence, Held: fence > 0 && s.now().Before(until)}, expires, true
}

func (s *boltStore) Consume(_ context.Context, id string, mark []byte, lease time.Duration, expires time.Time) (bool, Record, error) {
	s.maybeSweep()
	first := false
	var rec Record
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if r, _, ok := s.record(tx, id); ok {
			rec = r
			return nil
		}
		first = true
		if err := tx.Bucket(bucketLeases).Put([]byte(id), leaseValue(expires, 1, s.now().Add(lease))); err != nil {
			return err
		}
		return tx.Bucket(bucketUsed).Put([]byte(id), value(expires, mark))
	})
	if err != nil {
		return false, Record{}, err
	}
	return first, rec, nil
}

func (s *boltStore) Used(_ context.Context, id string) (Record, error) {
	var rec Record
	err := s.db.View(func(tx *bbolt.Tx) error {
		r, _, ok := s.record(tx, id)
		if !ok {
			return ErrNotFound
		}
		rec = r
		return nil
	})
	return rec, err
}

func (s *boltStore) Renew(_ context.Context, id string, fence uint64, lease time.Duration) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		r, expires, ok := s.record(tx, id)
		if !ok || r.Fence != fence || !running(r.Mark) {
			return ErrFenced
		}
		return tx.Bucket(bucketLeases).Put([]byte(id), leaseValue(expires, fence, s.now().Add(lease)))
	})
}

func (s *boltStore) TakeOver(_ context.Context, id string, fence uint64, lease time.Duration) (uint64, error) {
	var next uint64
	err := s.db.Update(func(tx *bbolt.Tx) error {
		r, expires, ok := s.record(tx, id)
		if !ok || fence == 0 || r.Fence != fence || r.Held || !running(r.Mark) {
			return ErrFenced
		}
		next = fence + 1
		return tx.Bucket(bucketLeases).Put([]byte(id), leaseValue(expires, next, s.now().Add(lease)))
	})
	return next, err
}

func (s *boltStore) Finish(_ context.Context, id string, fence uint64, mark, outcome []byte, keepUntil, expires time.Time) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		if r, _, ok := s.record(tx, id); !ok || r.Fence != fence {
			return ErrFenced
		}
		if outcome != nil {
			if err := tx.Bucket(bucketOutcomes).Put([]byte(id), value(keepUntil, outcome)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketLeases).Put([]byte(id), leaseValue(expires, fence, time.Time{})); err != nil {
			return err
		}
		return tx.Bucket(bucketUsed).Put([]byte(id), value(expires, mark))
	})
}

func (s *boltStore) Outcome(_ context.Context, id string) ([]byte, error) {
	return s.get(bucketOutcomes, id)
}

func (s *boltStore) Close() error { return s.db.Close() }
