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

// ErrFenced is returned by a Store for a lease operation of a holder that
// no longer holds the lease: another replica took the use over (its
// fencing token is higher), or the use ended.
var ErrFenced = errors.New("the lease on this continuation's use is held by another replica")

// Record is a store's record of a continuation's use: the Manager's mark,
// and the lease of the replica running the resume.
type Record struct {
	// Mark is the Manager's record of the use.
	Mark []byte
	// Fence is the fencing token of the lease's latest holder: 1 for the
	// replica that used the continuation, one more for each takeover; 0
	// for a use recorded without a lease (by an older release).
	Fence uint64
	// Held reports that the lease is live: its holder renewed it within
	// its time to live.
	Held bool
}

// Store holds paused states too large for a token, remembers which
// continuations were used, leases the running of each use to one replica
// at a time, and keeps the outcome of each use for a while (so that a
// Resume cut off can be retried). Keys are pause ids (hex): random, and
// reached only through a continuation verified for its tenant. Entries
// expire at the time given; a store may drop them any time after. Lease
// times to live are measured by the store's own clock (Redis's, for a
// shared store), so replicas' clocks need not agree. Implementations are
// safe for concurrent use.
type Store interface {
	// Put stores a state's body until expires, for q.Tenant, unless the
	// unexpired states the store holds would pass a bound of q: then it
	// stores nothing and returns a *QuotaError (wrapping ErrQuota). The
	// check and the write are atomic, also between replicas sharing the
	// store; a state's bytes count until it is deleted or expires.
	Put(ctx context.Context, id string, body []byte, expires time.Time, q Quota) error
	// Get returns a stored body, or ErrNotFound.
	Get(ctx context.Context, id string) ([]byte, error)
	// Delete drops a stored body and gives its bytes back to its tenant
	// (absent is not an error).
	Delete(ctx context.Context, id string) error
	// Consume marks a continuation used until expires, atomically, and
	// records mark with it (the Manager's record of the use): it reports
	// true the first time for an id, and the caller then holds the use's
	// lease, fencing token 1, for lease; ever after false, with the
	// record as it is.
	Consume(ctx context.Context, id string, mark []byte, lease time.Duration, expires time.Time) (first bool, rec Record, err error)
	// Used returns the record of a used continuation, or ErrNotFound.
	Used(ctx context.Context, id string) (Record, error)
	// Renew extends the lease of the holder of fencing token fence by
	// lease from now, also when it lapsed and nobody took it over since;
	// ErrFenced when fence is not the latest token or the use finished.
	Renew(ctx context.Context, id string, fence uint64, lease time.Duration) error
	// TakeOver takes the lease of a running use whose latest fencing
	// token is fence and whose lease lapsed, atomically: the caller holds
	// it, with the token returned (fence+1), for lease. ErrFenced when
	// the lease is live, another token was issued since, or the use
	// finished.
	TakeOver(ctx context.Context, id string, fence uint64, lease time.Duration) (uint64, error)
	// Finish records mark in place of the used continuation's (until
	// expires), keeps outcome until keepUntil (a nil outcome keeps none)
	// and ends the lease, atomically and only for the holder of the
	// latest fencing token (ErrFenced otherwise): whoever sees the new
	// mark finds the outcome, and a stale holder writes nothing.
	Finish(ctx context.Context, id string, fence uint64, mark, outcome []byte, keepUntil, expires time.Time) error
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
	bodies map[string]stateEntry
	// usage holds the bytes of the states in bodies by tenant; stored is
	// their sum.
	usage  map[string]int64
	stored int64
	used   map[string]*useEntry
	// outcomes holds the kept outcomes by id; order lists their ids,
	// oldest first; outcomeBytes is their size.
	outcomes        map[string]*list.Element
	order           *list.List
	outcomeBytes    int64
	maxOutcomeBytes int64
	// sweeps spaces the drops of expired entries.
	sweeps sweepGate
}

type memEntry struct {
	body    []byte
	expires time.Time
}

// stateEntry is a paused state in a memoryStore, and its tenant.
type stateEntry struct {
	memEntry
	tenant string
}

// useEntry is a use in a memoryStore: its mark and its lease.
type useEntry struct {
	memEntry
	fence      uint64
	leaseUntil time.Time
}

func (m *memoryStore) record(e *useEntry) Record {
	return Record{Mark: e.body, Fence: e.fence, Held: e.fence > 0 && m.now().Before(e.leaseUntil)}
}

// liveUse returns the unexpired use of id, or nil.
func (m *memoryStore) liveUse(id string) *useEntry {
	e := m.used[id]
	if e == nil || !m.now().Before(e.expires) {
		return nil
	}
	return e
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
	return &memoryStore{now: now, bodies: map[string]stateEntry{}, usage: map[string]int64{}, used: map[string]*useEntry{},
		outcomes: map[string]*list.Element{}, order: list.New(), maxOutcomeBytes: maxOutcomeBytes}
}

func (m *memoryStore) sweepLocked() {
	now := m.now()
	if !m.sweeps.due(now) {
		return
	}
	m.sweepStatesLocked(now)
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

// sweepStatesLocked drops the states expired at now.
func (m *memoryStore) sweepStatesLocked(now time.Time) {
	for id, e := range m.bodies {
		if !now.Before(e.expires) {
			m.dropStateLocked(id)
		}
	}
}

// dropStateLocked drops a state and gives its bytes back to its tenant.
func (m *memoryStore) dropStateLocked(id string) {
	e, ok := m.bodies[id]
	if !ok {
		return
	}
	delete(m.bodies, id)
	n := int64(len(e.body))
	m.stored -= n
	if m.usage[e.tenant] -= n; m.usage[e.tenant] <= 0 {
		delete(m.usage, e.tenant)
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

// Put drops the expired states before it refuses one for its quota:
// until then they may still count.
func (m *memoryStore) Put(_ context.Context, id string, body []byte, expires time.Time, q Quota) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	m.dropStateLocked(id)
	size := int64(len(body))
	if q.admit(m.usage[q.Tenant], m.stored, size) != nil {
		m.sweepStatesLocked(m.now())
		if err := q.admit(m.usage[q.Tenant], m.stored, size); err != nil {
			return err
		}
	}
	m.bodies[id] = stateEntry{memEntry: memEntry{body: append([]byte(nil), body...), expires: expires}, tenant: q.Tenant}
	m.usage[q.Tenant] += size
	m.stored += size
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
	m.dropStateLocked(id)
	return nil
}

func (m *memoryStore) Consume(_ context.Context, id string, mark []byte, lease time.Duration, expires time.Time) (bool, Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	if e := m.liveUse(id); e != nil {
		return false, m.record(e), nil
	}
	m.used[id] = &useEntry{memEntry: memEntry{body: append([]byte(nil), mark...), expires: expires}, fence: 1, leaseUntil: m.now().Add(lease)}
	return true, Record{}, nil
}

func (m *memoryStore) Used(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveUse(id)
	if e == nil {
		return Record{}, ErrNotFound
	}
	return m.record(e), nil
}

func (m *memoryStore) Renew(_ context.Context, id string, fence uint64, lease time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveUse(id)
	if e == nil || e.fence != fence || !running(e.body) {
		return ErrFenced
	}
	e.leaseUntil = m.now().Add(lease)
	return nil
}

func (m *memoryStore) TakeOver(_ context.Context, id string, fence uint64, lease time.Duration) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.liveUse(id)
	if e == nil || e.fence != fence || fence == 0 || !running(e.body) || m.now().Before(e.leaseUntil) {
		return 0, ErrFenced
	}
	e.fence++
	e.leaseUntil = m.now().Add(lease)
	return e.fence, nil
}

// Finish keeps outcome unless it is larger than the whole budget; older
// outcomes are dropped, the oldest first, to make room for it.
func (m *memoryStore) Finish(_ context.Context, id string, fence uint64, mark, outcome []byte, keepUntil, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	e := m.liveUse(id)
	if e == nil || e.fence != fence {
		return ErrFenced
	}
	m.dropOutcomeLocked(id)
	if outcome != nil && int64(len(outcome)) <= m.maxOutcomeBytes && m.now().Before(keepUntil) {
		for m.outcomeBytes+int64(len(outcome)) > m.maxOutcomeBytes {
			m.dropOutcomeLocked(m.order.Front().Value.(*outcomeEntry).id)
		}
		o := &outcomeEntry{id: id, memEntry: memEntry{body: append([]byte(nil), outcome...), expires: keepUntil}}
		m.outcomes[id] = m.order.PushBack(o)
		m.outcomeBytes += int64(len(outcome))
	}
	e.body, e.expires, e.leaseUntil = append([]byte(nil), mark...), expires, time.Time{}
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

// sweepGate spaces a store's sweeps of expired entries a minute apart:
// expired entries are invisible at once, so dropping them is only
// housekeeping, and a sweep per request would cost every request a scan.
type sweepGate struct {
	mu   sync.Mutex
	next time.Time
}

// due reports whether a sweep is due at now; when it is, the next one is
// due a minute later.
func (g *sweepGate) due(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Before(g.next) {
		return false
	}
	g.next = now.Add(time.Minute)
	return true
}
