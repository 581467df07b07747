package durable

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
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

	mu      sync.Mutex
	sweepAt time.Time
}

var (
	bucketStates   = []byte("states")
	bucketUsed     = []byte("used")
	bucketOutcomes = []byte("outcomes")
)

// OpenFile opens (or creates) the single-file store at path.
func OpenFile(path string) (Store, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("durable store %s: %w (is another process using it?)", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketStates, bucketUsed, bucketOutcomes} {
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
	s.mu.Lock()
	now := s.now()
	due := !now.Before(s.sweepAt)
	if due {
		s.sweepAt = now.Add(time.Minute)
	}
	s.mu.Unlock()
	if due {
		s.sweep()
	}
}

func (s *boltStore) sweep() {
	_ = s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketStates, bucketUsed, bucketOutcomes} {
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

func (s *boltStore) Consume(_ context.Context, id string, mark []byte, expires time.Time) (bool, []byte, error) {
	s.maybeSweep()
	first := false
	var recorded []byte
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUsed)
		if v := b.Get([]byte(id)); v != nil && s.live(v) {
			recorded = append([]byte(nil), v[8:]...)
			return nil
		}
		first = true
		return b.Put([]byte(id), value(expires, mark))
	})
	if err != nil {
		return false, nil, err
	}
	return first, recorded, nil
}

func (s *boltStore) Used(_ context.Context, id string) ([]byte, error) {
	return s.get(bucketUsed, id)
}

func (s *boltStore) Finish(_ context.Context, id string, mark, outcome []byte, keepUntil, expires time.Time) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		if outcome != nil {
			if err := tx.Bucket(bucketOutcomes).Put([]byte(id), value(keepUntil, outcome)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketUsed).Put([]byte(id), value(expires, mark))
	})
}

func (s *boltStore) Outcome(_ context.Context, id string) ([]byte, error) {
	return s.get(bucketOutcomes, id)
}

func (s *boltStore) Close() error { return s.db.Close() }
