package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// Quota holds each tenant's request rate and running executions across
// the replicas that share it. Every call may fail when the store is
// down; the caller decides how to degrade (ptcd falls back to each
// replica's own limits: docs/operations.md).
type Quota interface {
	// Allow takes one request from tenant's token bucket (rate requests
	// per second, burst at most at once): 0 when taken, else how long to
	// wait before one is there.
	Allow(ctx context.Context, tenant string, rate float64, burst int) (time.Duration, error)
	// Acquire takes one of tenant's max running slots, a lease that
	// lapses after ttl unless renewed (a replica that dies frees its
	// slots so); ok is false when all are taken.
	Acquire(ctx context.Context, tenant string, max int, ttl time.Duration) (lease string, ok bool, err error)
	// Renew extends a lease by ttl; false when it had lapsed.
	Renew(ctx context.Context, tenant, lease string, ttl time.Duration) (bool, error)
	// Release frees a lease.
	Release(ctx context.Context, tenant, lease string) error
}

// RedisQuota is a Quota in Redis: a token bucket per tenant in a hash
// (rate:<tenant>) and the running executions in a sorted set of leases
// scored by their expiry (running:<tenant>). Lua scripts read Redis's
// clock, so replicas' clocks do not matter.
type RedisQuota struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedisQuota returns a Quota over c, its keys prefixed with prefix.
func NewRedisQuota(c redis.UniversalClient, prefix string) *RedisQuota {
	return &RedisQuota{c: c, prefix: prefix}
}

// allowScript: KEYS bucket; ARGV rate (per second), burst. Returns the
// milliseconds to wait, 0 when a token was taken.
var allowScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil then tokens = burst; at = now end
tokens = math.min(burst, tokens + (now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait
`)

// Allow takes one request from tenant's bucket.
func (q *RedisQuota) Allow(ctx context.Context, tenant string, rate float64, burst int) (time.Duration, error) {
	if rate <= 0 || math.IsInf(rate, 0) || math.IsNaN(rate) {
		return 0, fmt.Errorf("cluster quota: rate %g is not a positive number", rate)
	}
	burst = max(burst, 1)
	ms, err := allowScript.Run(ctx, q.c, []string{q.prefix + "rate:" + tenant}, rate, burst).Int64()
	if err != nil {
		return 0, fmt.Errorf("cluster quota: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// acquireScript: KEYS running; ARGV max, lease id, ttl (ms). Lapsed
// leases are dropped first. Returns 1 when the lease was added.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return 1
`)

// renewScript: KEYS running; ARGV lease id, ttl (ms). Returns 1 when the
// lease was live.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return 1
`)

// Acquire takes one of tenant's max running slots for ttl.
func (q *RedisQuota) Acquire(ctx context.Context, tenant string, max int, ttl time.Duration) (string, bool, error) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	lease := hex.EncodeToString(b[:])
	n, err := acquireScript.Run(ctx, q.c, []string{q.prefix + "running:" + tenant}, max, lease, ttl.Milliseconds()).Int64()
	if err != nil {
		return "", false, fmt.Errorf("cluster quota: %w", err)
	}
	return lease, n == 1, nil
}

// Renew extends a lease by ttl.
func (q *RedisQuota) Renew(ctx context.Context, tenant, lease string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, q.c, []string{q.prefix + "running:" + tenant}, lease, ttl.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("cluster quota: %w", err)
	}
	return n == 1, nil
}

// Release frees a lease.
func (q *RedisQuota) Release(ctx context.Context, tenant, lease string) error {
	if err := q.c.ZRem(ctx, q.prefix+"running:"+tenant, lease).Err(); err != nil {
		return fmt.Errorf("cluster quota: %w", err)
	}
	return nil
}
