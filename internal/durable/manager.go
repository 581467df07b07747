package durable

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
)

// Defaults of Config.
const (
	DefaultTTL           = 24 * time.Hour
	DefaultMaxTokenBytes = 256 << 10
	DefaultMaxStateBytes = 64 << 20
	// DefaultLease is how long the lease on a resume lasts without a
	// renewal: how long a retry waits, at most, before it takes over the
	// resume of a replica that died.
	DefaultLease = 15 * time.Second
	// DefaultLeaseRenew is how often the replica running a resume renews
	// its lease.
	DefaultLeaseRenew = 5 * time.Second
	// DefaultMaxTakeovers bounds how many times a resume is taken over
	// after its replica stopped.
	DefaultMaxTakeovers = 3
)

// Config configures a Manager.
type Config struct {
	// Keys sign and encrypt continuations: the first signs new ones, all
	// verify (list the previous key second while rotating). Empty: one
	// random key is made, and continuations resume only in this process.
	Keys []Key
	// TTL is how long a continuation can be resumed (default 24h).
	TTL time.Duration
	// MaxTokenBytes bounds a continuation's text (default 256 KiB); a
	// paused state that does not fit goes to Store, or is refused.
	MaxTokenBytes int
	// MaxStateBytes bounds a paused state's encoding (default 64 MiB).
	MaxStateBytes int
	// Store, when set, holds states larger than a token allows,
	// remembers used continuations and keeps the outcomes of resumes
	// (shared by replicas when it is shared); without it used
	// continuations and outcomes are kept in memory.
	Store Store
	// MaxBytesPerTenant bounds the paused states Store holds for one
	// tenant, in bytes (default 1 GiB; a negative value is no bound): a
	// pause that would pass it ends its execution with PAUSE_LIMIT. A
	// state's bytes count until it is resumed or expires.
	MaxBytesPerTenant int64
	// MaxStoredBytes bounds the paused states Store holds for all
	// tenants, in bytes (0: no bound).
	MaxStoredBytes int64
	// OutcomeRetention is how long the outcome of a resume is kept for a
	// retry with the same continuation and answers (default 10m; never
	// beyond the continuation's expiry).
	OutcomeRetention time.Duration
	// OutcomeBytes bounds the outcomes kept in memory when there is no
	// Store (default 64 MiB; the oldest are dropped first).
	OutcomeBytes int64
	// Lease is how long the lease of the replica running a resume lasts
	// without a renewal (default 15s): once it lapses, a retry of the
	// same Resume on any replica takes the resume over.
	Lease time.Duration
	// LeaseRenew is how often that replica renews it (default a third of
	// Lease, at most 5s); it must be shorter than Lease.
	LeaseRenew time.Duration
	// MaxTakeovers bounds the takeovers of one resume (default 3; a
	// negative value allows none): a script that brings down every
	// replica that runs it is not run again and again.
	MaxTakeovers int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Manager seals paused states into continuations and opens them again.
// It is safe for concurrent use.
type Manager struct {
	cfg       Config
	keys      []derived
	byID      map[string]derived
	used      Store
	ephemeral bool
}

// New returns a Manager; it checks every key.
func New(cfg Config) (*Manager, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxTokenBytes <= 0 {
		cfg.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if cfg.MaxStateBytes <= 0 {
		cfg.MaxStateBytes = DefaultMaxStateBytes
	}
	if cfg.OutcomeRetention <= 0 {
		cfg.OutcomeRetention = DefaultOutcomeRetention
	}
	if cfg.MaxBytesPerTenant == 0 {
		cfg.MaxBytesPerTenant = DefaultMaxBytesPerTenant
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.LeaseRenew <= 0 {
		cfg.LeaseRenew = min(cfg.Lease/3, DefaultLeaseRenew)
	}
	if cfg.LeaseRenew >= cfg.Lease {
		return nil, fmt.Errorf("durable: the lease renewal interval (%s) must be shorter than the lease (%s)", cfg.LeaseRenew, cfg.Lease)
	}
	switch {
	case cfg.MaxTakeovers == 0:
		cfg.MaxTakeovers = DefaultMaxTakeovers
	case cfg.MaxTakeovers < 0:
		cfg.MaxTakeovers = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Manager{cfg: cfg, byID: map[string]derived{}, used: cfg.Store}
	keys := cfg.Keys
	if len(keys) == 0 {
		secret := make([]byte, 32)
		id := make([]byte, 6)
		_, _ = rand.Read(secret)
		_, _ = rand.Read(id)
		keys = []Key{{ID: "ephemeral-" + hex.EncodeToString(id), Secret: secret}}
		m.ephemeral = true
	}
	for _, k := range keys {
		d, err := derive(k)
		if err != nil {
			return nil, fmt.Errorf("durable: %w", err)
		}
		if _, dup := m.byID[k.ID]; dup {
			return nil, fmt.Errorf("durable: key id %q appears twice", k.ID)
		}
		m.keys = append(m.keys, d)
		m.byID[k.ID] = d
	}
	if m.used == nil {
		m.used = newMemoryStore(cfg.Now, cfg.OutcomeBytes)
	}
	return m, nil
}

// Ephemeral reports whether the Manager signs with a key it made itself:
// its continuations die with the process.
func (m *Manager) Ephemeral() bool { return m.ephemeral }

// Close closes the store.
func (m *Manager) Close() error {
	if m.cfg.Store != nil {
		return m.cfg.Store.Close()
	}
	return nil
}

// Sealed is a continuation just issued.
type Sealed struct {
	Token   string
	Expires time.Time
	// PauseID identifies the pause (hex).
	PauseID string
}

// Seal turns a paused state into a continuation bound to tenant. A state
// too large for a token goes to the store; without a store, or when the
// store holds as many of the tenant's (or all tenants') states as
// MaxBytesPerTenant (MaxStoredBytes) allows, it is refused with a
// PAUSE_LIMIT breach (the execution cannot pause).
func (m *Manager) Seal(ctx context.Context, tenant string, st *State) (Sealed, *fault.Error) {
	tok, exp, id, ferr := m.seal(ctx, tenant, st)
	return Sealed{Token: tok, Expires: exp, PauseID: id}, ferr
}

func (m *Manager) seal(ctx context.Context, tenant string, st *State) (string, time.Time, string, *fault.Error) {
	if len(tenant) > maxTenantLen {
		return "", time.Time{}, "", &fault.Error{Kind: fault.KindInternal, Message: "the tenant's name is too long for a continuation"}
	}
	plain, err := st.marshal()
	if err != nil {
		return "", time.Time{}, "", fault.Wrap(fault.KindInternal, err, "the paused execution could not be encoded")
	}
	if len(plain) > m.cfg.MaxStateBytes {
		return "", time.Time{}, "", fault.Breach(fault.KindPauseLimit, int64(m.cfg.MaxStateBytes), int64(len(plain)),
			"the paused execution's state is %d bytes, more than the %d a paused execution may keep; have the script keep less of its tool results before it pauses", len(plain), m.cfg.MaxStateBytes)
	}
	now := m.cfg.Now()
	h := header{keyID: m.keys[0].id, issued: now, expires: now.Add(m.cfg.TTL).Truncate(time.Second), tenant: tenant, pending: encodePending(st)}
	_, _ = rand.Read(h.pauseID[:])
	k := m.keys[0]
	body, err := encrypt(k, h.pauseID, plain)
	if err != nil {
		return "", time.Time{}, "", fault.Wrap(fault.KindInternal, err, "the paused execution could not be encoded")
	}
	id := hex.EncodeToString(h.pauseID[:])
	tok := seal(k, h, body, nil)
	if len(tok) <= m.cfg.MaxTokenBytes {
		return tok, h.expires, id, nil
	}
	if m.cfg.Store == nil {
		return "", time.Time{}, "", fault.Breach(fault.KindPauseLimit, int64(m.cfg.MaxTokenBytes), int64(len(tok)),
			"the paused execution needs a continuation of %d bytes, more than the %d allowed; configure a state store (durable.store) to keep large paused states on the server, or have the script keep less of its tool results before it pauses", len(tok), m.cfg.MaxTokenBytes)
	}
	q := Quota{Tenant: tenant, MaxTenantBytes: m.cfg.MaxBytesPerTenant, MaxTotalBytes: m.cfg.MaxStoredBytes}
	if err := m.cfg.Store.Put(ctx, id, body, h.expires, q); err != nil {
		if qe := (*QuotaError)(nil); errors.As(err, &qe) {
			return "", time.Time{}, "", quotaBreach(qe)
		}
		return "", time.Time{}, "", fault.Wrap(fault.KindInternal, err, "the paused execution could not be saved in the state store; run it again")
	}
	digest := sha256.Sum256(body)
	h.stored = true
	tok = seal(k, h, nil, digest[:])
	if len(tok) > m.cfg.MaxTokenBytes {
		// The pending calls do not fit beside the reference: they are
		// left out, and the answers are checked against the state.
		h.pending = nil
		tok = seal(k, h, nil, digest[:])
	}
	return tok, h.expires, id, nil
}

// Opened is a verified continuation. Its stored state, if any, is read
// by State, not by Open: a Resume refused for its answers never reads it.
type Opened struct {
	PauseID string
	Expires time.Time
	stored  bool

	m     *Manager
	key   derived
	pid   [pauseIDLen]byte
	body  []byte // inline: the encrypted state; stored: its SHA-256
	state *State
	// pending are the calls the state waits for, when the continuation
	// carries them (hasPending).
	pending    []PendingCall
	hasPending bool
}

// Pending returns the calls the paused execution waits for, as its
// continuation records them, without reading or decoding the state;
// false when the continuation does not record them (see token.go).
func (o *Opened) Pending() ([]PendingCall, bool) { return o.pending, o.hasPending }

// State reads (from the store, for a stored state) and decodes the paused
// state, once: a resumed execution needs it unless it goes on from
// memory. A stored state that is gone (its continuation was used, or it
// expired) is FAILED_PRECONDITION.
func (o *Opened) State(ctx context.Context) (*State, *fault.Error) {
	if o.state != nil {
		return o.state, nil
	}
	body := o.body
	if o.stored {
		b, err := o.m.cfg.Store.Get(ctx, o.PauseID)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, fault.Reject(fault.CodeFailedPrecondition, "continuation's paused state is gone from the state store (it was resumed already, or it expired)").Because(fault.ReasonContinuationStateGone)
		case err != nil:
			return nil, fault.Reject(fault.CodeUnavailable, "the state store is unavailable: %v", err)
		}
		if sum := sha256.Sum256(b); !bytes.Equal(sum[:], o.body) {
			return nil, &fault.Error{Code: fault.CodeInternal, Message: "the state store holds another state under this continuation's id"}
		}
		body = b
	}
	plain, err := decrypt(o.key, o.pid, body, o.m.cfg.MaxStateBytes)
	if err != nil {
		return nil, fault.Reject(fault.CodeInvalidArgument, "continuation is %v", err).Because(fault.ReasonContinuationMalformed)
	}
	st, err := unmarshal(plain)
	if err != nil {
		return nil, fault.Reject(fault.CodeInvalidArgument, "continuation is malformed: %v", err).Because(fault.ReasonContinuationMalformed)
	}
	o.state = st
	return st, nil
}

// Open verifies a continuation for tenant; it reads nothing from the
// store (Opened.State reads and decodes the state) and does not use it
// up (Consume does). Every failure is a request error: a malformed,
// altered or foreign continuation is INVALID_ARGUMENT, one of another
// tenant PERMISSION_DENIED, an expired one FAILED_PRECONDITION (as is
// one whose state is stored on a server without a store).
func (m *Manager) Open(_ context.Context, tok, tenant string) (*Opened, *fault.Error) {
	if tok == "" {
		return nil, fault.Reject(fault.CodeInvalidArgument, "continuation is empty: pass the continuation of a paused execution").Because(fault.ReasonContinuationMalformed)
	}
	// Seal never issues a continuation longer than MaxTokenBytes, so a
	// longer one is refused before a byte of it is decoded. Replicas that
	// resume each other's continuations share this setting.
	if len(tok) > m.cfg.MaxTokenBytes {
		return nil, fault.Reject(fault.CodeInvalidArgument, "continuation is %d bytes, longer than any this server issues (durable.max_token_bytes is %d)", len(tok), m.cfg.MaxTokenBytes).Because(fault.ReasonContinuationMalformed)
	}
	h, body, signed, mac, err := parse(tok)
	if err != nil {
		return nil, fault.Reject(fault.CodeInvalidArgument, "continuation is %v", err).Because(fault.ReasonContinuationMalformed)
	}
	k, ok := m.byID[h.keyID]
	if !ok {
		return nil, fault.Reject(fault.CodeInvalidArgument, "continuation is signed with key %q, which this server does not hold (a retired key, or another deployment's)", h.keyID).Because(fault.ReasonContinuationUnknownKey)
	}
	if !verify(k, signed, mac) {
		return nil, fault.Reject(fault.CodeInvalidArgument, "continuation failed its signature check: it was altered, or it is not this server's").Because(fault.ReasonContinuationTampered)
	}
	if h.tenant != tenant {
		return nil, fault.Reject(fault.CodePermissionDenied, "continuation belongs to another tenant").Because(fault.ReasonContinuationWrongTenant)
	}
	if !m.cfg.Now().Before(h.expires) {
		return nil, fault.Reject(fault.CodeFailedPrecondition, "continuation expired at %s; the paused execution can no longer be resumed", h.expires.Format(time.RFC3339)).Because(fault.ReasonContinuationExpired)
	}
	if h.stored && m.cfg.Store == nil {
		return nil, fault.Reject(fault.CodeFailedPrecondition, "continuation refers to a state store this server does not have; resume it where the store is configured").Because(fault.ReasonContinuationNeedsStore)
	}
	o := &Opened{PauseID: hex.EncodeToString(h.pauseID[:]), Expires: h.expires, stored: h.stored, m: m, key: k, pid: h.pauseID, body: body}
	if h.pending != nil {
		if o.pending, err = decodePending(h.pending); err != nil {
			return nil, fault.Reject(fault.CodeInvalidArgument, "continuation is malformed: %v", err).Because(fault.ReasonContinuationMalformed)
		}
		o.hasPending = true
	}
	return o, nil
}
