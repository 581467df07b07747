package server

import (
	"context"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/admission"
	"github.com/ptcrun/ptc/internal/fault"
)

// SlotStore is the shared store of tenants' running executions
// (cluster.Quota's leases): a slot is a lease that lapses after ttl
// unless renewed, so that a replica that dies frees its tenants' slots.
type SlotStore interface {
	Acquire(ctx context.Context, tenant string, max int, ttl time.Duration) (lease string, ok bool, err error)
	Renew(ctx context.Context, tenant, lease string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, tenant, lease string) error
}

// SlotLeaseTTL is how long a shared slot outlives the replica holding it;
// the holder renews it every third of that.
const SlotLeaseTTL = 10 * time.Second

// slotCallTimeout bounds one call to the shared store.
const slotCallTimeout = 2 * time.Second

// WithSharedQuota makes a tenant's max_concurrent hold across every
// replica sharing st, besides this replica's admission. When st fails the
// replica's own admission alone applies (fail open, logged).
func WithSharedQuota(st SlotStore) Option { return func(s *Server) { s.slots = st } }

// sharedSlot takes one of tenant's quota slots in the shared store. It
// returns the func that frees it, or a RESOURCE_EXHAUSTED error when
// every slot is taken on some replica. A store failure admits the
// request: the replica's own quota has admitted it already.
func (s *Server) sharedSlot(ctx context.Context, tenant string, quota int) (func(), *fault.Error) {
	if s.slots == nil || quota <= 0 {
		return func() {}, nil
	}
	actx, cancel := context.WithTimeout(ctx, slotCallTimeout)
	lease, ok, err := s.slots.Acquire(actx, tenant, quota, SlotLeaseTTL)
	cancel()
	if err != nil {
		s.log.WarnContext(ctx, "the shared quota store failed: the tenant's concurrency holds on this replica only", "tenant", tenant, "err", err)
		return func() {}, nil
	}
	if !ok {
		r := &admission.Rejected{Reason: admission.ReasonQueueFull, Tenant: tenant, TenantQuota: true, RetryAfter: time.Second}
		if s.metrics != nil {
			s.metrics.ObserveRejected(r.Reason)
		}
		return nil, &fault.Error{Code: fault.CodeResourceExhausted,
			Message: fmt.Sprintf("tenant %s runs its %d executions at once across the replicas: retry after %s", tenant, quota, r.RetryAfter), RetryAfter: r.RetryAfter}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	// The keeper renews the lease until the execution ends (stop closed).
	go func() {
		defer close(done)
		t := time.NewTicker(SlotLeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(context.Background(), slotCallTimeout)
				_, _ = s.slots.Renew(rctx, tenant, lease, SlotLeaseTTL)
				cancel()
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		rctx, cancel := context.WithTimeout(context.Background(), slotCallTimeout)
		_ = s.slots.Release(rctx, tenant, lease)
		cancel()
	}, nil
}
