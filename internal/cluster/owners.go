package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Owners records which replica parked each paused execution, by pause id
// (durable.Sealed.PauseID), under the replica's advertised address.
type Owners interface {
	// Claim records addr as the owner of pauseID until until.
	Claim(ctx context.Context, pauseID, addr string, until time.Time) error
	// Owner returns the owner of pauseID, "" when none is recorded.
	Owner(ctx context.Context, pauseID string) (string, error)
}

// maxAddrLen bounds an owner's address as read back from the store.
const maxAddrLen = 256

// RedisOwners keeps owners in Redis, under prefix + "owner:" + pause id,
// each expiring on its own.
type RedisOwners struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedisOwners returns Owners over c, its keys prefixed with prefix.
func NewRedisOwners(c redis.UniversalClient, prefix string) *RedisOwners {
	return &RedisOwners{c: c, prefix: prefix}
}

// Claim records addr as pauseID's owner until until.
func (o *RedisOwners) Claim(ctx context.Context, pauseID, addr string, until time.Time) error {
	return o.c.SetArgs(ctx, o.prefix+"owner:"+pauseID, addr, redis.SetArgs{ExpireAt: until}).Err()
}

// Owner returns pauseID's owner, "" when none is recorded (or it is
// implausibly long).
func (o *RedisOwners) Owner(ctx context.Context, pauseID string) (string, error) {
	s, err := o.c.Get(ctx, o.prefix+"owner:"+pauseID).Result()
	if errors.Is(err, redis.Nil) || len(s) > maxAddrLen {
		return "", nil
	}
	return s, err
}
