package durable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStore is a Store in Redis, shared by every replica that points at
// the same server: a continuation used on one replica is refused on all
// (SET NX), the replica running a resume holds a lease on it that the
// others respect (and take over once it lapses), a paused state stored by
// one is found by all, and so is the outcome of a resume. Entries expire with the continuation, outcomes
// after their retention (PXAT).
type redisStore struct {
	c      *redis.Client
	prefix string
}

// DefaultRedisPrefix prefixes the keys a Redis store writes.
const DefaultRedisPrefix = "ptc:durable:"

// OpenRedis connects to the Redis server at url
// (redis://[user:password@]host:port[/db], or rediss:// for TLS) and
// checks that it answers. prefix ("" for DefaultRedisPrefix) prefixes
// every key.
func OpenRedis(ctx context.Context, url, prefix string) (Store, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("durable store: redis url: %w", err)
	}
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	c := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("durable store: redis at %s: %w", opt.Addr, err)
	}
	return &redisStore{c: c, prefix: prefix}, nil
}

// A paused state is the key state:<id>, expiring with its continuation
// (PXAT), and its entry in what bounds the states: the sorted set
// quota:expiry (its id, scored by its expiry), the hash quota:owner (its
// id's size and tenant, "<size> <tenant>"), the hash quota:usage (each
// tenant's bytes) and the counter quota:total (all tenants' bytes). The
// scripts below change them together. Redis expires the state's key
// itself; the next Put gives the bytes of states past their expiry
// (by Redis's clock) back, a bounded number at a time, before it checks
// the bounds. (A state evicted by a maxmemory policy counts until its
// expiry.)

// releaseLua gives back the bytes of the state whose id it is given:
// KEYS[2..5] are quota:expiry, quota:owner, quota:usage, quota:total.
const releaseLua = `
local function release(id)
  redis.call('ZREM', KEYS[2], id)
  local o = redis.call('HGET', KEYS[3], id)
  if not o then return end
  redis.call('HDEL', KEYS[3], id)
  local sp = string.find(o, ' ', 1, true)
  local size = tonumber(string.sub(o, 1, sp - 1))
  local tenant = string.sub(o, sp + 1)
  if redis.call('HINCRBY', KEYS[4], tenant, -size) <= 0 then redis.call('HDEL', KEYS[4], tenant) end
  if redis.call('DECRBY', KEYS[5], size) <= 0 then redis.call('DEL', KEYS[5]) end
end
`

// putScript: KEYS state, quota:expiry, quota:owner, quota:usage,
// quota:total; ARGV id, body, expiry (ms since the epoch), tenant, the
// tenant's bound, the total bound (<= 0: none), how many expired states
// to give back at most. Returns {1} when stored, else {0, bound, used}
// (the tenant's bound) or {-1, bound, used} (the total).
var putScript = redis.NewScript(releaseLua + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[7]))) do release(id) end
redis.call('DEL', KEYS[1])
release(ARGV[1])
local size = string.len(ARGV[2])
local bound = tonumber(ARGV[5])
local used = tonumber(redis.call('HGET', KEYS[4], ARGV[4]) or '0')
if bound > 0 and used + size > bound then return {0, bound, used} end
bound = tonumber(ARGV[6])
used = tonumber(redis.call('GET', KEYS[5]) or '0')
if bound > 0 and used + size > bound then return {-1, bound, used} end
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], size .. ' ' .. ARGV[4])
redis.call('HINCRBY', KEYS[4], ARGV[4], size)
redis.call('INCRBY', KEYS[5], size)
return {1}
`)

// deleteScript: KEYS as putScript's; ARGV id.
var deleteScript = redis.NewScript(releaseLua + `
redis.call('DEL', KEYS[1])
release(ARGV[1])
return 1
`)

// redisReleaseBatch bounds the expired states one Put gives back.
const redisReleaseBatch = 256

func (s *redisStore) stateKeys(id string) []string {
	return []string{s.prefix + "state:" + id, s.prefix + "quota:expiry", s.prefix + "quota:owner",
		s.prefix + "quota:usage", s.prefix + "quota:total"}
}

func (s *redisStore) Put(ctx context.Context, id string, body []byte, expires time.Time, q Quota) error {
	v, err := putScript.Run(ctx, s.c, s.stateKeys(id), id, body, expires.UnixMilli(), q.Tenant,
		q.MaxTenantBytes, q.MaxTotalBytes, redisReleaseBatch).Int64Slice()
	switch {
	case err != nil:
		return err
	case len(v) == 3 && v[0] <= 0:
		return &QuotaError{Total: v[0] < 0, Limit: v[1], Used: v[2], Size: int64(len(body))}
	case len(v) != 1 || v[0] != 1:
		return fmt.Errorf("durable store: unexpected reply %v", v)
	}
	return nil
}

func (s *redisStore) Get(ctx context.Context, id string) ([]byte, error) {
	b, err := s.c.Get(ctx, s.prefix+"state:"+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	return b, err
}

func (s *redisStore) Delete(ctx context.Context, id string) error {
	return deleteScript.Run(ctx, s.c, s.stateKeys(id), id).Err()
}

// A use is three keys: used:<id> holds the Manager's mark, fence:<id>
// the latest fencing token, lease:<id> the token of the holder while its
// lease is live (a key with a time to live of the lease, so that Redis's
// clock, not the replicas', decides when it lapses). The scripts below
// change them together; fencing compares fence:<id>, never a clock.
// (The keys of a use do not share a hash slot: the store needs one Redis
// server, or a primary with replicas, not a cluster.)

// consumeScript: KEYS used, fence, lease; ARGV mark, expiry (ms since the
// epoch), lease (ms). Returns {1} for the first use, else {0, mark, fence,
// held}.
var consumeScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PXAT', ARGV[2]) then
  redis.call('SET', KEYS[2], '1', 'PXAT', ARGV[2])
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[3])
  return {1}
end
return {0, redis.call('GET', KEYS[1]) or '', redis.call('GET', KEYS[2]) or '0', redis.call('EXISTS', KEYS[3])}
`)

// usedScript: KEYS used, fence, lease. Returns {mark, fence, held}, or
// {} when there is no use.
var usedScript = redis.NewScript(`
local m = redis.call('GET', KEYS[1])
if not m then return {} end
return {m, redis.call('GET', KEYS[2]) or '0', redis.call('EXISTS', KEYS[3])}
`)

// renewScript: KEYS used, fence, lease; ARGV token, lease (ms). Returns 1
// when renewed, 0 when fenced.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local m = redis.call('GET', KEYS[1])
if not m or string.sub(m, 1, 1) ~= 'r' then return 0 end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
return 1
`)

// takeOverScript: KEYS used, fence, lease; ARGV token seen, lease (ms).
// Returns the new token, or 0 when fenced.
var takeOverScript = redis.NewScript(`
if ARGV[1] == '0' or redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local m = redis.call('GET', KEYS[1])
if not m or string.sub(m, 1, 1) ~= 'r' then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
local f = redis.call('INCR', KEYS[2])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
redis.call('SET', KEYS[3], f, 'PX', ARGV[2])
return f
`)

// finishScript: KEYS used, fence, lease, outcome; ARGV token, mark,
// expiry (ms), outcome, its expiry (ms), whether there is an outcome.
// Returns 1 when written, 0 when fenced.
var finishScript = redis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if ARGV[6] == '1' then redis.call('SET', KEYS[4], ARGV[4], 'PXAT', ARGV[5]) end
redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3])
redis.call('DEL', KEYS[3])
return 1
`)

func (s *redisStore) useKeys(id string) []string {
	return []string{s.prefix + "used:" + id, s.prefix + "fence:" + id, s.prefix + "lease:" + id}
}

// ms is a duration in whole milliseconds, at least 1.
func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// recordOf reads {mark, fence, held} from a script's reply.
func recordOf(v []any) (Record, error) {
	if len(v) != 3 {
		return Record{}, fmt.Errorf("durable store: unexpected reply %v", v)
	}
	mark, _ := v[0].(string)
	fs, _ := v[1].(string)
	held, _ := v[2].(int64)
	fence, err := strconv.ParseUint(fs, 10, 64)
	if err != nil {
		return Record{}, fmt.Errorf("durable store: fencing token %q: %w", fs, err)
	}
	return Record{Mark: []byte(mark), Fence: fence, Held: held == 1}, nil
}

func (s *redisStore) Consume(ctx context.Context, id string, mark []byte, lease time.Duration, expires time.Time) (bool, Record, error) {
	v, err := consumeScript.Run(ctx, s.c, s.useKeys(id), mark, expires.UnixMilli(), ms(lease)).Slice()
	if err != nil {
		return false, Record{}, err
	}
	if len(v) == 1 {
		return true, Record{}, nil
	}
	rec, err := recordOf(v[1:])
	return false, rec, err
}

func (s *redisStore) Used(ctx context.Context, id string) (Record, error) {
	v, err := usedScript.Run(ctx, s.c, s.useKeys(id)).Slice()
	if err != nil {
		return Record{}, err
	}
	if len(v) == 0 {
		return Record{}, ErrNotFound
	}
	return recordOf(v)
}

func (s *redisStore) Renew(ctx context.Context, id string, fence uint64, lease time.Duration) error {
	n, err := renewScript.Run(ctx, s.c, s.useKeys(id), strconv.FormatUint(fence, 10), ms(lease)).Int64()
	switch {
	case err != nil:
		return err
	case n != 1:
		return ErrFenced
	}
	return nil
}

func (s *redisStore) TakeOver(ctx context.Context, id string, fence uint64, lease time.Duration) (uint64, error) {
	n, err := takeOverScript.Run(ctx, s.c, s.useKeys(id), strconv.FormatUint(fence, 10), ms(lease)).Int64()
	switch {
	case err != nil:
		return 0, err
	case n <= 0:
		return 0, ErrFenced
	}
	return uint64(n), nil
}

// Finish writes the outcome (expiring at keepUntil) and the new mark and
// ends the lease in one script, for the latest holder only.
func (s *redisStore) Finish(ctx context.Context, id string, fence uint64, mark, outcome []byte, keepUntil, expires time.Time) error {
	has := "0"
	if outcome != nil {
		has = "1"
	}
	keys := append(s.useKeys(id), s.prefix+"outcome:"+id)
	n, err := finishScript.Run(ctx, s.c, keys, strconv.FormatUint(fence, 10), mark, expires.UnixMilli(), outcome, keepUntil.UnixMilli(), has).Int64()
	switch {
	case err != nil:
		return err
	case n != 1:
		return ErrFenced
	}
	return nil
}

func (s *redisStore) Outcome(ctx context.Context, id string) ([]byte, error) {
	b, err := s.c.Get(ctx, s.prefix+"outcome:"+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	return b, err
}

func (s *redisStore) Close() error { return s.c.Close() }
