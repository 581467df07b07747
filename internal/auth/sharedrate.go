package auth

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// RateStore is the shared store of tenants' token buckets
// (cluster.Quota's Allow): it answers 0 when the request may go, else
// how long to wait.
type RateStore interface {
	Allow(ctx context.Context, tenant string, rate float64, burst int) (time.Duration, error)
}

// SharedRateLimiter enforces each tenant's request rate across every
// replica sharing its store: one bucket per tenant, in the store. When the
// store fails, it falls back to the replica's own buckets (each replica
// then lets a tenant send its full rate: fail open, logged once per
// outage) until the store answers again.
type SharedRateLimiter struct {
	local *RateLimiter
	store RateStore
	log   *slog.Logger
	// down is set while the store fails (to log the change once).
	down atomic.Bool
}

// NewSharedRateLimiter returns a limiter over store, falling back to
// local; log receives the store's outages and recoveries.
func NewSharedRateLimiter(local *RateLimiter, store RateStore, log *slog.Logger) *SharedRateLimiter {
	return &SharedRateLimiter{local: local, store: store, log: log}
}

// Limit takes one request from the caller's tenant's shared bucket, or
// from the replica's own bucket while the store is down.
func (r *SharedRateLimiter) Limit(ctx context.Context) error {
	if m, ok := grpc.Method(ctx); ok && strings.HasPrefix(m, HealthService) {
		return nil
	}
	t, ok := FromContext(ctx)
	if !ok || t.Rate <= 0 {
		return nil
	}
	burst := t.Burst
	if burst <= 0 {
		burst = int(math.Max(1, math.Ceil(t.Rate)))
	}
	wait, err := r.store.Allow(ctx, t.Name, t.Rate, burst)
	if err != nil {
		if !r.down.Swap(true) {
			r.log.Warn("the shared quota store failed: each replica enforces tenants' rates on its own until it answers", "err", err)
		}
		return r.local.Limit(ctx)
	}
	if r.down.Swap(false) {
		r.log.Info("the shared quota store answers again: tenants' rates hold across replicas")
	}
	if wait > 0 {
		return &RateError{Tenant: t.Name, Rate: t.Rate, RetryAfter: wait}
	}
	return nil
}
