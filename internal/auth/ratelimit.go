package auth

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
)

// RateLimiter enforces each tenant's request rate. It implements the
// go-grpc-middleware ratelimit.Limiter interface and must run after
// Authenticate (it reads the tenant from the context). Tenants without a
// rate, and health checks, are never limited.
type RateLimiter struct {
	byTenant map[*Tenant]*rate.Limiter
}

// NewRateLimiter returns a limiter with one token bucket per tenant of a
// that has a rate.
func NewRateLimiter(a *Authenticator) *RateLimiter {
	r := &RateLimiter{byTenant: map[*Tenant]*rate.Limiter{}}
	for _, t := range a.tenants {
		if t.Rate <= 0 {
			continue
		}
		burst := t.Burst
		if burst <= 0 {
			burst = int(math.Max(1, math.Ceil(t.Rate)))
		}
		r.byTenant[t] = rate.NewLimiter(rate.Limit(t.Rate), burst)
	}
	return r
}

// Limit takes one request from the caller's tenant's bucket, or says how
// long to wait before retrying.
func (r *RateLimiter) Limit(ctx context.Context) error {
	if m, ok := grpc.Method(ctx); ok && strings.HasPrefix(m, HealthService) {
		return nil
	}
	t, ok := FromContext(ctx)
	if !ok {
		return nil
	}
	l := r.byTenant[t]
	if l == nil {
		return nil
	}
	res := l.Reserve()
	if !res.OK() {
		return fmt.Errorf("tenant %s sends more than its %g requests/s: slow down", t.Name, t.Rate)
	}
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return &RateError{Tenant: t.Name, Rate: t.Rate, RetryAfter: d}
	}
	return nil
}

// RateError is a request refused by a tenant's rate limit.
type RateError struct {
	Tenant     string
	Rate       float64
	RetryAfter time.Duration
}

// Error says which tenant went over its rate and when to retry.
func (e *RateError) Error() string {
	return fmt.Sprintf("tenant %s is over its rate of %g requests/s: retry after %s", e.Tenant, e.Rate, e.RetryAfter.Round(time.Millisecond))
}
