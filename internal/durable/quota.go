package durable

import (
	"errors"
	"fmt"

	"github.com/ptcrun/ptc/internal/fault"
)

// DefaultMaxBytesPerTenant bounds the bytes of the paused states a store
// holds for one tenant when Config.MaxBytesPerTenant is not set.
const DefaultMaxBytesPerTenant = 1 << 30

// ErrQuota is wrapped by the *QuotaError a Store returns for a state
// that would take its tenant's, or the store's, stored states past
// their bound.
var ErrQuota = errors.New("the state store's bound on paused states is reached")

// Quota bounds what a Store.Put may add: the bytes of the unexpired
// states the store holds for Tenant, and for all tenants, the new one
// included. A bound <= 0 is no bound.
type Quota struct {
	// Tenant owns the state; the store remembers it, so that a Delete or
	// the state's expiry gives the bytes back to that tenant.
	Tenant string
	// MaxTenantBytes bounds the tenant's states.
	MaxTenantBytes int64
	// MaxTotalBytes bounds all tenants' states.
	MaxTotalBytes int64
}

// QuotaError is a Put refused by its Quota: Size more bytes would take
// the Used bytes already held past Limit.
type QuotaError struct {
	// Total is true when the bound of all tenants' states was reached,
	// false when the tenant's was.
	Total bool
	// Limit is the bound in force, Used the bytes held (unexpired states
	// only) and Size the refused state's.
	Limit, Used, Size int64
}

func (e *QuotaError) Error() string {
	whose := "the tenant's"
	if e.Total {
		whose = "all tenants'"
	}
	return fmt.Sprintf("a paused state of %d bytes would take %s stored paused states from %d to %d bytes, past the bound of %d",
		e.Size, whose, e.Used, e.Used+e.Size, e.Limit)
}

// Unwrap returns ErrQuota.
func (e *QuotaError) Unwrap() error { return ErrQuota }

// admit returns the *QuotaError of adding size bytes to tenant bytes held
// by the tenant and total bytes held by all, nil when q admits them.
func (q Quota) admit(tenant, total, size int64) error {
	switch {
	case q.MaxTenantBytes > 0 && tenant+size > q.MaxTenantBytes:
		return &QuotaError{Limit: q.MaxTenantBytes, Used: tenant, Size: size}
	case q.MaxTotalBytes > 0 && total+size > q.MaxTotalBytes:
		return &QuotaError{Total: true, Limit: q.MaxTotalBytes, Used: total, Size: size}
	}
	return nil
}

// quotaBreach is the PAUSE_LIMIT breach of a pause whose state the store
// refused for its quota: the limit and the bytes the store would have
// held, naming the setting.
func quotaBreach(qe *QuotaError) *fault.Error {
	key, whose := "durable.max_bytes_per_tenant", "this tenant's"
	if qe.Total {
		key, whose = "durable.max_bytes", "all tenants'"
	}
	e := fault.Breach(fault.KindPauseLimit, qe.Limit, qe.Used+qe.Size,
		"the paused execution's state (%d bytes) would take %s paused states in the state store to %d bytes, past %s (%d); resume paused executions first (a state is kept until its execution is resumed or its continuation expires, durable.ttl), or have the script keep less of its tool results before it pauses",
		qe.Size, whose, qe.Used+qe.Size, key, qe.Limit)
	e.Cause = qe
	return e
}
