package service

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/cluster"
	"github.com/ptcrun/ptc/internal/config"
	"github.com/ptcrun/ptc/internal/durable"
	"github.com/ptcrun/ptc/internal/server"
)

// clusterCallTimeout bounds one call of a replica to the shared store of
// owners and quotas: a store that does not answer by then is taken for
// down (quotas fall back to each replica's own, a Resume runs where it
// landed).
const clusterCallTimeout = 500 * time.Millisecond

// clusterParts are what replicas sharing a Redis store coordinate
// through besides continuations: the owners of parked executions, the
// tenants' shared quotas, and resume forwarding.
type clusterParts struct {
	store *cluster.Store
	fwd   *server.Forwarder
}

// openCluster connects to the durable section's Redis store for owners
// and quotas (its keys under the durable prefix + "cluster:"); nil parts
// without a Redis store.
func openCluster(ctx context.Context, c *config.Config, lookupEnv func(string) (string, bool)) (*clusterParts, error) {
	d := c.Durable
	if d.Store.RedisURLEnv == "" {
		return &clusterParts{}, nil
	}
	url, ok := lookupEnv(d.Store.RedisURLEnv)
	if !ok {
		return nil, fmt.Errorf("environment variable %s (durable.store.redis_url_env) is not set", d.Store.RedisURLEnv)
	}
	prefix := d.Store.RedisPrefix
	if prefix == "" {
		prefix = durable.DefaultRedisPrefix
	}
	st, err := cluster.OpenRedis(ctx, url, prefix+"cluster:", clusterCallTimeout)
	if err != nil {
		return nil, err
	}
	return &clusterParts{store: st}, nil
}

// onPark records this replica as the owner of a parked execution, when
// it advertises an address (nil otherwise).
func (p *clusterParts) onPark(c *config.Config, log *slog.Logger) func(context.Context, string, time.Time) {
	self := c.Durable.Forward.Advertise
	if p.store == nil || self == "" {
		return nil
	}
	return func(ctx context.Context, pauseID string, until time.Time) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clusterCallTimeout)
		defer cancel()
		if err := p.store.Claim(cctx, pauseID, self, until); err != nil {
			log.Warn("the owner of a parked execution could not be recorded: its resume may re-run it on another replica", "err", err)
		}
	}
}

// forwarder is the interceptor that forwards Resumes, nil without an
// advertised address.
func (p *clusterParts) forwarder(c *config.Config, lookupEnv func(string) (string, bool), log *slog.Logger) (grpc.UnaryServerInterceptor, error) {
	f := c.Durable.Forward
	if p.store == nil || f.Advertise == "" {
		return nil, nil
	}
	var keys [][]byte
	for _, k := range c.Durable.Keys {
		v, ok := lookupEnv(k.SecretEnv)
		if !ok {
			return nil, fmt.Errorf("environment variable %s (durable key %q) is not set: set it before starting ptcd", k.SecretEnv, k.ID)
		}
		keys = append(keys, server.ForwardKey([]byte(v)))
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("durable.forward.advertise needs durable.keys: replicas sign forwarded resumes with them")
	}
	var creds credentials.TransportCredentials
	if c.TLS.Enabled() {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	p.fwd = server.NewForwarder(server.ForwardConfig{Self: f.Advertise, Owners: p.store, Keys: keys,
		Timeout: time.Duration(f.Timeout), Creds: creds, Log: log})
	return p.fwd.Unary, nil
}

// rateLimiter is the shared rate limiter over local, or local without a
// shared store.
func (p *clusterParts) rateLimiter(local *auth.RateLimiter, log *slog.Logger) interface {
	Limit(context.Context) error
} {
	if p.store == nil {
		return local
	}
	return auth.NewSharedRateLimiter(local, p.store, log)
}

// serverOptions are the request server's shared quota, if any.
func (p *clusterParts) serverOptions() []server.Option {
	if p.store == nil {
		return nil
	}
	return []server.Option{server.WithSharedQuota(p.store)}
}

// close closes the forwarder's connections and the store.
func (p *clusterParts) close() {
	if p == nil {
		return
	}
	if p.fwd != nil {
		_ = p.fwd.Close()
	}
	if p.store != nil {
		_ = p.store.Close()
	}
}
