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
)

// OpenFile opens (or creates) the single-file store at path.
func OpenFile(path string) (Store, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("durable store %s: %w (is another process using it?)", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketStates, bucketUsed, bucketOutcomes, bucketLeases} {
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
		for _, name := range [][]byte{bucketStates, bucketUsed, bucketOutcomes, bucketLeases} {
			b := tx.Bucket(name)
			var dead [][]byte
			_ = b.ForEach(func(k, v []byte) error {
				if !s.live(v) {
					dead = append(dead, append([]byte(nil), k...))
				}
				return nil
			})
			for _, k := range dead {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s *boltStore) Put(_ context.Context, id string, body []byte, expires time.Time) error {
	s.maybeSweep()
	return s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketStates).Put([]byte(id), value(expires, body))
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
	return s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketStates).Delete([]byte(id))
	})
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
