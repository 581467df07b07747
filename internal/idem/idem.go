// Package idem makes an execution idempotent by the id its caller gave it:
// a Table records, per tenant and execution id, a digest of the request
// and, once it ended, its outcome, for a retention window. A request
// repeated with the same id and the same digest gets the kept outcome, or
// waits for the running one; the same id with another request is refused,
// naming the first field that differs.
//
// The table is in memory and bounded: the kept outcomes by count and by
// bytes (oldest first), every entry by the retention window. Running
// entries are never evicted (admission bounds them). It imports nothing of
// ptc.
package idem

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"
)

// Key names an execution: its tenant ("" without one) and the id its
// caller gave it. Ids of one tenant never match another's.
type Key struct {
	Tenant string
	ID     string
}

// Field is the digest of one field of a request.
type Field struct {
	// Name is the field's name as the caller spells it (e.g. "script").
	Name string
	// Sum is the SHA-256 of the field's canonical encoding.
	Sum [sha256.Size]byte
}

// Digest is a request's fields' digests, in a fixed order.
type Digest []Field

// differs returns the name of the first field where d and o differ, ""
// when they are the same request.
func (d Digest) differs(o Digest) string {
	for i, f := range d {
		if i >= len(o) || o[i].Name != f.Name {
			return f.Name
		}
		if o[i].Sum != f.Sum {
			return f.Name
		}
	}
	if len(o) > len(d) {
		return o[len(d)].Name
	}
	return ""
}

// Config bounds a Table.
type Config struct {
	// Retention is how long an ended execution's outcome is kept.
	Retention time.Duration
	// MaxEntries bounds the ended executions remembered (outcomes and
	// records of outcomes dropped for bytes); past it the oldest of the
	// tenant that has the most is forgotten.
	MaxEntries int
	// MaxBytes bounds the bytes of the kept outcomes; past it the oldest
	// outcome of the tenant whose outcomes take the most bytes is dropped
	// (its execution is still remembered, see NotKeptError). So one
	// tenant's outcomes push out only its own, until it holds no more than
	// another.
	MaxBytes int64
	// Linger is how long a running execution whose every caller gave up
	// waits for one to come back before it is abandoned (Call.Abandon;
	// the table itself does not read it).
	Linger time.Duration
	// MaxWaiters bounds the callers waiting at once for one running
	// execution, its first caller included (DefaultMaxWaiters when 0): a
	// caller past it is refused with a *BusyError instead of waiting.
	// Admission bounds the running executions, this what waits for them.
	MaxWaiters int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultMaxWaiters is Config.MaxWaiters when it is 0: a client that
// retries after a lost connection waits once, alongside the first call
// it lost track of, with room for a few impatient retries more.
const DefaultMaxWaiters = 8

// MismatchError is a request whose id was used by another request.
type MismatchError struct {
	Key Key
	// Field names the first field that differs.
	Field string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("execution_id %q was used by another request (its %s differs) within the retention window; use a new execution_id for a new request, or repeat the first request unchanged to get its outcome", e.Key.ID, e.Field)
}

// NotKeptError is a repeated request whose execution ran within the
// retention window but whose outcome was dropped to keep the table
// within MaxBytes.
type NotKeptError struct {
	Key Key
	// Size is the outcome's size in bytes.
	Size int64
	// Limit is MaxBytes.
	Limit int64
}

func (e *NotKeptError) Error() string {
	return fmt.Sprintf("execution %q already ran, but its outcome (%d bytes) was not kept: the server keeps at most %d bytes of outcomes (idempotency.max_bytes); use a new execution_id to run it again", e.Key.ID, e.Size, e.Limit)
}

// BusyError is a repeated request refused because MaxWaiters callers
// already wait for its running execution.
type BusyError struct {
	Key Key
	// Waiters is how many wait, the bound.
	Waiters int
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("execution %q is still running and %d callers already wait for its outcome, as many as may; retry later with the same request to get it", e.Key.ID, e.Waiters)
}

// Call is one execution under its id: running, or ended with an outcome
// (its value and size) or an error that kept it from running.
type Call[V any] struct {
	key  Key
	done chan struct{}
	val  V
	err  error
	max  int // MaxWaiters

	// mu guards the waiters and the abandon timer (Abandon).
	mu      sync.Mutex
	waiters int
	linger  time.Duration
	abandon func()
	timer   *time.Timer
}

// Abandon makes f be called when every caller waiting for the running
// execution gave up (its context ended) and none came back within
// linger: the first request sets it to cancel an execution nobody waits
// for. A caller coming back within linger stops the countdown.
func (c *Call[V]) Abandon(linger time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.linger, c.abandon = linger, f
}

// Wait waits for the execution's outcome, or for ctx to end (then it
// returns ctx's error). While the execution runs, at most MaxWaiters
// callers wait: one more gets a *BusyError at once.
func (c *Call[V]) Wait(ctx context.Context) (V, error) {
	c.mu.Lock()
	select {
	case <-c.done:
	default:
		if c.waiters >= c.max {
			c.mu.Unlock()
			var zero V
			return zero, &BusyError{Key: c.key, Waiters: c.waiters}
		}
	}
	c.waiters++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.mu.Unlock()
	select {
	case <-c.done:
		c.mu.Lock()
		c.waiters--
		c.mu.Unlock()
		return c.val, c.err
	case <-ctx.Done():
		c.mu.Lock()
		c.waiters--
		if c.waiters == 0 && c.abandon != nil && c.timer == nil {
			// The timer's goroutine runs abandon once, unless a caller
			// comes back first; Finish stops it.
			c.timer = time.AfterFunc(c.linger, c.abandon)
		}
		c.mu.Unlock()
		var zero V
		return zero, ctx.Err()
	}
}

// record is an entry: running (call not done) or ended (in the list).
type record[V any] struct {
	key    Key
	digest Digest
	call   *Call[V]
	// Ended entries: size of the outcome, whether it is still kept, and
	// when the entry expires.
	size  int64
	kept  bool
	until time.Time
	el    *list.Element // in Table.ended
	tel   *list.Element // in its tenant's ended
	kel   *list.Element // in its tenant's kept, while kept
}

// tenantUse is what one tenant's ended entries hold.
type tenantUse struct {
	name  string
	ended *list.List // its ended entries, oldest first
	kept  *list.List // those whose outcome is kept, oldest first
	bytes int64      // of its kept outcomes
}

// Table is the record of executions by id. It is safe for concurrent use.
type Table[V any] struct {
	cfg Config

	mu      sync.Mutex
	entries map[Key]*record[V]
	// ended holds the ended entries, oldest at the front.
	ended *list.List
	bytes int64
	// tenants holds each tenant's share of ended, for the bounds.
	tenants map[string]*tenantUse
}

// New returns an empty table bounded by cfg. A MaxEntries below 1 keeps
// one entry; a MaxBytes below 0 keeps no outcome.
func New[V any](cfg Config) *Table[V] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxEntries < 1 {
		cfg.MaxEntries = 1
	}
	if cfg.MaxWaiters < 1 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	return &Table[V]{cfg: cfg, entries: map[Key]*record[V]{}, ended: list.New(), tenants: map[string]*tenantUse{}}
}

// Claim looks key up for a request of digest d. The first request of a
// key (or the first after its entry expired or was forgotten) gets a new
// Call and first true: it must run the execution and call Finish. A
// repeated one gets the running or ended Call (first false) to Wait on. A
// request whose digest differs gets a *MismatchError; one whose outcome
// was dropped, a *NotKeptError.
func (t *Table[V]) Claim(key Key, d Digest) (c *Call[V], first bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire()
	if r, ok := t.entries[key]; ok {
		if f := r.digest.differs(d); f != "" {
			return nil, false, &MismatchError{Key: key, Field: f}
		}
		if r.el != nil && !r.kept {
			return nil, false, &NotKeptError{Key: key, Size: r.size, Limit: t.cfg.MaxBytes}
		}
		return r.call, false, nil
	}
	r := &record[V]{key: key, digest: d, call: &Call[V]{key: key, done: make(chan struct{}), max: t.cfg.MaxWaiters}}
	t.entries[key] = r
	return r.call, true, nil
}

// Finish ends the Call that Claim gave first for key. An error err means
// the execution did not run (the request was refused): waiting calls get
// err and the key is forgotten, so a retry runs. Otherwise val, of size
// bytes, is the outcome, kept for the retention window within the bounds.
func (t *Table[V]) Finish(key Key, c *Call[V], val V, size int64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.val, c.err = val, err
	close(c.done)
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.abandon = nil
	c.mu.Unlock()
	r, ok := t.entries[key]
	if !ok || r.call != c {
		return
	}
	if err != nil || t.cfg.Retention <= 0 {
		delete(t.entries, key)
		return
	}
	u := t.tenants[key.Tenant]
	if u == nil {
		u = &tenantUse{name: key.Tenant, ended: list.New(), kept: list.New()}
		t.tenants[key.Tenant] = u
	}
	r.size, r.kept, r.until = size, true, t.cfg.Now().Add(t.cfg.Retention)
	r.el, r.tel, r.kel = t.ended.PushBack(r), u.ended.PushBack(r), u.kept.PushBack(r)
	t.bytes += size
	u.bytes += size
	if size > t.cfg.MaxBytes {
		// Alone past the bound: dropping the others would not help.
		t.drop(r)
	}
	// Drop outcomes until the kept ones fit, and forget entries beyond
	// the count: each time the oldest of the tenant that holds the most.
	for t.bytes > 0 && t.bytes > t.cfg.MaxBytes {
		u := t.heaviest(func(u *tenantUse) int64 { return u.bytes })
		t.drop(u.kept.Front().Value.(*record[V]))
	}
	for t.ended.Len() > t.cfg.MaxEntries {
		u := t.heaviest(func(u *tenantUse) int64 { return int64(u.ended.Len()) })
		t.forget(u.ended.Front().Value.(*record[V]))
	}
}

// heaviest is the tenant with the most of what weight measures (the
// first name in order among equals).
func (t *Table[V]) heaviest(weight func(*tenantUse) int64) *tenantUse {
	var top *tenantUse
	for _, u := range t.tenants {
		if top == nil || weight(u) > weight(top) || weight(u) == weight(top) && u.name < top.name {
			top = u
		}
	}
	return top
}

// drop lets go of an ended entry's outcome, keeping the entry.
func (t *Table[V]) drop(r *record[V]) {
	if !r.kept {
		return
	}
	t.bytes -= r.size
	u := t.tenants[r.key.Tenant]
	u.bytes -= r.size
	u.kept.Remove(r.kel)
	r.kel = nil
	r.kept = false
	// Waiters hold the Call; the table lets go of its value.
	r.call = nil
}

// forget removes an ended entry.
func (t *Table[V]) forget(r *record[V]) {
	t.drop(r)
	t.ended.Remove(r.el)
	u := t.tenants[r.key.Tenant]
	u.ended.Remove(r.tel)
	if u.ended.Len() == 0 {
		delete(t.tenants, r.key.Tenant)
	}
	delete(t.entries, r.key)
}

// expire forgets the ended entries whose retention has passed (the list
// is in the order they ended, so in the order they expire).
func (t *Table[V]) expire() {
	now := t.cfg.Now()
	for e := t.ended.Front(); e != nil; e = t.ended.Front() {
		r := e.Value.(*record[V])
		if now.Before(r.until) {
			return
		}
		t.forget(r)
	}
}

// Stats reports the entries (running and ended) and the bytes of the kept
// outcomes.
func (t *Table[V]) Stats() (entries int, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries), t.bytes
}
