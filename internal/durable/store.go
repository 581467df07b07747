package durable

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotFound is returned by Store.Get for a state it does not hold (never
// stored, expired, or deleted after its resume).
var ErrNotFound = errors.New("not found")

// Store holds paused states too large for a token and remembers which
// continuations were used. Keys are pause ids (hex). Entries expire at the
// time given; a store may drop them any time after. Implementations are
// safe for concurrent use.
type Store interface {
	// Put stores a state's body until expires.
	Put(ctx context.Context, id string, body []byte, expires time.Time) error
	// Get returns a stored body, or ErrNotFound.
	Get(ctx context.Context, id string) ([]byte, error)
	// Delete drops a stored body (absent is not an error).
	Delete(ctx context.Context, id string) error
	// Consume marks a continuation used until expires, atomically: it
	// reports true the first time for an id, false ever after.
	Consume(ctx context.Context, id string, expires time.Time) (bool, error)
	// Close releases the store.
	Close() error
}

// memoryStore is a Store in this process's memory: what a server without
// a configured store uses to refuse a second resume of a continuation (on
// this replica, until it restarts).
type memoryStore struct {
	mu     sync.Mutex
	now    func() time.Time
	bodies map[string]memEntry
	used   map[string]time.Time
	// sweepAt is when expired entries are dropped next.
	sweepAt time.Time
}

type memEntry struct {
	body    []byte
	expires time.Time
}

// NewMemoryStore returns a Store kept in memory.
func NewMemoryStore() Store { return newMemoryStore(time.Now) }

func newMemoryStore(now func() time.Time) *memoryStore {
	return &memoryStore{now: now, bodies: map[string]memEntry{}, used: map[string]time.Time{}}
}

func (m *memoryStore) sweepLocked() {
	now := m.now()
	if now.Before(m.sweepAt) {
		return
	}
	m.sweepAt = now.Add(time.Minute)
	for id, e := range m.bodies {
		if !now.Before(e.expires) {
			delete(m.bodies, id)
		}
	}
	for id, exp := range m.used {
		if !now.Before(exp) {
			delete(m.used, id)
		}
	}
}

func (m *memoryStore) Put(_ context.Context, id string, body []byte, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	m.bodies[id] = memEntry{body: append([]byte(nil), body...), expires: expires}
	return nil
}

func (m *memoryStore) Get(_ context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.bodies[id]
	if !ok || !m.now().Before(e.expires) {
		return nil, ErrNotFound
	}
	return e.body, nil
}

func (m *memoryStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.bodies, id)
	return nil
}

func (m *memoryStore) Consume(_ context.Context, id string, expires time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	if _, ok := m.used[id]; ok {
		return false, nil
	}
	m.used[id] = expires
	return true, nil
}

func (m *memoryStore) Close() error { return nil }
