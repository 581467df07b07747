package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix prefixes the keys of Owners and Quota in Redis.
const DefaultPrefix = "ptc:cluster:"

// Store is the Redis client that Owners and Quota share.
type Store struct {
	*RedisOwners
	*RedisQuota
	c *redis.Client
}

// OpenRedis connects to the Redis server at url (as durable.OpenRedis)
// and checks that it answers; prefix "" is DefaultPrefix. Calls made
// later fail when it is down, each within timeout.
func OpenRedis(ctx context.Context, url, prefix string, timeout time.Duration) (*Store, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("cluster store: redis url: %w", err)
	}
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if timeout > 0 {
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = timeout, timeout, timeout
		opt.MaxRetries = -1
		// One dial attempt: a store that refuses connections is down now,
		// not after five attempts 100ms apart.
		opt.DialerRetries, opt.DialerRetryTimeout = 1, time.Millisecond
	}
	c := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cluster store: redis at %s: %w", opt.Addr, err)
	}
	return &Store{RedisOwners: NewRedisOwners(c, prefix), RedisQuota: NewRedisQuota(c, prefix), c: c}, nil
}

// Close closes the client.
func (s *Store) Close() error { return s.c.Close() }
