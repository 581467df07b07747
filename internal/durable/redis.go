package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisStore is a Store in Redis, shared by every replica that points at
// the same server: a continuation used on one replica is refused on all
// (SET NX), a paused state stored by one is found by all, and so is the
// outcome of a resume. Entries expire with the continuation, outcomes
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

func (s *redisStore) Put(ctx context.Context, id string, body []byte, expires time.Time) error {
	return s.c.SetArgs(ctx, s.prefix+"state:"+id, body, redis.SetArgs{ExpireAt: expires}).Err()
}

func (s *redisStore) Get(ctx context.Context, id string) ([]byte, error) {
	b, err := s.c.Get(ctx, s.prefix+"state:"+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	return b, err
}

func (s *redisStore) Delete(ctx context.Context, id string) error {
	return s.c.Del(ctx, s.prefix+"state:"+id).Err()
}

// Consume sets the used key only if it is absent (SET NX), and reads the
// recorded mark when it was not. (The read is a second command: a mark
// only ever changes from "running" to "finished" with the same answers,
// and one that expired in between reads as empty.)
func (s *redisStore) Consume(ctx context.Context, id string, mark []byte, expires time.Time) (bool, []byte, error) {
	err := s.c.SetArgs(ctx, s.prefix+"used:"+id, mark, redis.SetArgs{Mode: "NX", ExpireAt: expires}).Err()
	switch {
	case err == nil:
		return true, nil, nil
	case !errors.Is(err, redis.Nil):
		return false, nil, err
	}
	prev, err := s.Used(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, nil, nil
	}
	return false, prev, err
}

func (s *redisStore) Used(ctx context.Context, id string) ([]byte, error) {
	b, err := s.c.Get(ctx, s.prefix+"used:"+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	return b, err
}

// Finish writes the outcome (expiring at keepUntil) and the new mark in
// one MULTI/EXEC transaction.
func (s *redisStore) Finish(ctx context.Context, id string, mark, outcome []byte, keepUntil, expires time.Time) error {
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if outcome != nil {
			p.SetArgs(ctx, s.prefix+"outcome:"+id, outcome, redis.SetArgs{ExpireAt: keepUntil})
		}
		p.SetArgs(ctx, s.prefix+"used:"+id, mark, redis.SetArgs{ExpireAt: expires})
		return nil
	})
	return err
}

func (s *redisStore) Outcome(ctx context.Context, id string) ([]byte, error) {
	b, err := s.c.Get(ctx, s.prefix+"outcome:"+id).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	return b, err
}

func (s *redisStore) Close() error { return s.c.Close() }
