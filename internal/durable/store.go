package durable

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotFound is returned by Store.Get for a state it does not hold (never
// stored, expired, or deleted after its resume).
var ErrNotFound = errors.New("not found")

// Store holds paused states too large for a token, remembers which
// continuations were used, and keeps the outcome of each use for a while
// (so that a Resume cut off can be retried). Keys are pause ids (hex):
// random, and reached only through a continuation verified for its
// tenant. Entries expire at the time given; a store may drop them any time
// after. Implementations are safe for concurrent use.
type Store interface {
	// Put stores a state's body until expires.
	Put(ctx context.Context, id string, body []byte, expires time.Time) error
	// Get returns a stored body, or ErrNotFound.
	Get(ctx context.Context, id string) ([]byte, error)
	// Delete drops a stored body (absent is not an error).
	Delete(ctx context.Context, id string) error
	// Consume marks a continuation used until expires, atomically, and
	// records mark with it (the Manager's record of the use): it reports
	// true the first time for an id; ever after false, with the mark
	// recorded last.
	Consume(ctx context.Context, id string, mark []byte, expires time.Time) (first bool, recorded []byte, err error)
	// Used returns the mark of a used continuation, or ErrNotFound.
	Used(ctx context.Context, id string) ([]byte, error)
	// Finish records mark in place of the used continuation's (until
	// expires) and keeps outcome until keepUntil (a nil outcome keeps
	// none), atomically: whoever sees the new mark finds the outcome.
	Finish(ctx context.Context, id string, mark, outcome []byte, keepUntil, expires time.Time) error
	// Outcome returns a kept outcome, or ErrNotFound.
	Outcome(ctx context.Context, id string) ([]byte, error)
	// Close releases the store.
	Close() error
}

// memoryStore is a Store in this process's memory: what a server without
// a configured store uses to refuse a second resume of a continuation (on
// this replica, until it restarts) and to keep the outcomes of resumes.
// Outcomes are bounded by maxOutcomeBytes in all, the oldest dropped
// first.
type memoryStore struct {
	mu     sync.Mutex
	now    func() time.Time
	bodies map[string]memEntry
	used   map[string]memEntry
	// outcomes holds the kept outcomes by id; order lists their ids,
	// oldest first; outcomeBytes is their size.
	outcomes        map[string]*list.Element
	order           *list.List
	outcomeBytes    int64
	maxOutcomeBytes int64
	// sweepAt is when expired entries are dropped next.
	sweepAt time.Time
}

type memEntry struct {
	body    []byte
	expires time.Time
}

// outcomeEntry is a kept outcome in a memoryStore's order list.
type outcomeEntry struct {
	id string
	memEntry
}

// NewMemoryStore returns a Store kept in memory whose kept outcomes take
// at most maxOutcomeBytes in all (<= 0: DefaultOutcomeBytes).
func NewMemoryStore(maxOutcomeBytes int64) Store { return newMemoryStore(time.Now, maxOutcomeBytes) }

func newMemoryStore(now func() time.Time, maxOutcomeBytes int64) *memoryStore {
	if maxOutcomeBytes <= 0 {
		maxOutcomeBytes = DefaultOutcomeBytes
	}
	return &memoryStore{now: now, bodies: map[string]memEntry{}, used: map[string]memEntry{},
		outcomes: map[string]*list.Element{}, order: list.New(), maxOutcomeBytes: maxOutcomeBytes}
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
	for id, e := range m.used {
		if !now.Before(e.expires) {
			delete(m.used, id)
		}
	}
	for id, el := range m.outcomes {
		if !now.Before(el.Value.(*outcomeEntry).expires) {
			m.dropOutcomeLocked(id)
		}
	}
}

func (m *memoryStore) dropOutcomeLocked(id string) {
	el, ok := m.outcomes[id]
	if !ok {
		return
	}
	o := m.order.Remove(el).(*outcomeEntry)
	delete(m.outcomes, id)
	m.outcomeBytes -= int64(len(o.body))
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

func (m *memoryStore) Consume(_ context.Context, id string, mark []byte, expires time.Time) (bool, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	if e, ok := m.used[id]; ok && m.now().Before(e.expires) {
		return false, e.body, nil
	}
	m.used[id] = memEntry{body: append([]byte(nil), mark...), expires: expires}
	return true, nil, nil
}

func (m *memoryStore) Used(_ context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.used[id]
	if !ok || !m.now().Before(e.expires) {
		return nil, ErrNotFound
	}
	return e.body, nil
}

// Finish keeps outcome unless it is larger than the whole budget; older
// outcomes are dropped, the oldest first, to make room for it.
func (m *memoryStore) Finish(_ context.Context, id string, mark, outcome []byte, keepUntil, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	m.dropOutcomeLocked(id)
	if outcome != nil && int64(len(outcome)) <= m.maxOutcomeBytes && m.now().Before(keepUntil) {
		for m.outcomeBytes+int64(len(outcome)) > m.maxOutcomeBytes {
			m.dropOutcomeLocked(m.order.Front().Value.(*outcomeEntry).id)
		}
		e := &outcomeEntry{id: id, memEntry: memEntry{body: append([]byte(nil), outcome...), expires: keepUntil}}
		m.outcomes[id] = m.order.PushBack(e)
		m.outcomeBytes += int64(len(outcome))
	}
	m.used[id] = memEntry{body: append([]byte(nil), mark...), expires: expires}
	return nil
}

func (m *memoryStore) Outcome(_ context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.outcomes[id]
	if !ok || !m.now().Before(el.Value.(*outcomeEntry).expires) {
		return nil, ErrNotFound
	}
	return el.Value.(*outcomeEntry).body, nil
}

func (m *memoryStore) Close() error { return nil }
